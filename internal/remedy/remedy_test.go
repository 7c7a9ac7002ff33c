package remedy

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestDiagnose(t *testing.T) {
	base := Facts{MaxUserNamespaces: 15000, UnprivilegedUsernsClone: -1, AppArmorRestrictUserns: -1, Seccomp: 0, NestedUserns: 0, Binary: "/usr/bin/agentbox"}
	with := func(mod func(*Facts)) Facts { f := base; mod(&f); return f }
	for _, tc := range []struct {
		name  string
		stage Stage
		err   error
		facts Facts
		// cause and every one of want must appear in Cause and Remedy;
		// none of notWant may appear in the remedy.
		cause    string
		want     []string
		notWant  []string
		noUserns bool
	}{
		{name: "max_user_namespaces=0", stage: Clone, err: syscall.ENOSPC, facts: with(func(f *Facts) { f.MaxUserNamespaces = 0 }),
			cause: "max_user_namespaces = 0", want: []string{"sysctl -w user.max_user_namespaces=15000"}, notWant: []string{"nested"}},
		{name: "max_user_namespaces=0 nested", stage: Clone, err: fmt.Errorf("fork/exec /proc/self/exe: %w", syscall.ENOSPC), facts: with(func(f *Facts) { f.MaxUserNamespaces = 0; f.NestedUserns = 1 }),
			cause: "max_user_namespaces = 0", want: []string{"sysctl -w user.max_user_namespaces=15000", "nested user namespace", "enclosing"}},
		{name: "limit exhausted", stage: Clone, err: syscall.ENOSPC, facts: base,
			cause: "exhausted (user.max_user_namespaces = 15000)", want: []string{"sysctl -w user.max_user_namespaces=15000"}, notWant: []string{"nested"}},
		{name: "limit exhausted nested", stage: Clone, err: syscall.ENOSPC, facts: with(func(f *Facts) { f.NestedUserns = 1 }),
			cause: "exhausted", want: []string{"sysctl -w user.max_user_namespaces=15000", "enclosing user namespace"}},
		{name: "debian sysctl", stage: Clone, err: fmt.Errorf("fork/exec: %w", syscall.EPERM), facts: with(func(f *Facts) { f.UnprivilegedUsernsClone = 0 }),
			cause: "unprivileged_userns_clone = 0", want: []string{"sysctl -w kernel.unprivileged_userns_clone=1"}},
		{name: "container seccomp", stage: Clone, err: syscall.EPERM, facts: with(func(f *Facts) { f.Seccomp = 2 }),
			cause: "seccomp", want: []string{"seccomp profile", "CLONE_NEWUSER", "--security-opt seccomp=unconfined"}},
		{name: "ubuntu apparmor at clone", stage: Clone, err: syscall.EPERM, facts: with(func(f *Facts) { f.AppArmorRestrictUserns = 1 }),
			cause: "apparmor_restrict_unprivileged_userns = 1", want: []string{"profile agentbox /usr/bin/agentbox flags=(unconfined) {\n  userns,\n}", "apparmor_parser -r"}},
		// Both distributions' knobs: the generic answer may not name one only.
		{name: "clone EPERM other", stage: Clone, err: syscall.EPERM, facts: base,
			cause: "EPERM", want: []string{"kernel.unprivileged_userns_clone", "Debian", "kernel.apparmor_restrict_unprivileged_userns", "Ubuntu", "user.max_user_namespaces", "seccomp", "SELinux"}},
		{name: "clone EINVAL", stage: Clone, err: syscall.EINVAL, facts: base, cause: "EINVAL", want: []string{"CONFIG_USER_NS"}},
		{name: "ubuntu apparmor", stage: Mount, err: syscall.EPERM, facts: with(func(f *Facts) { f.AppArmorRestrictUserns = 1 }),
			cause: "AppArmor", want: []string{"/etc/apparmor.d/agentbox", "profile agentbox /usr/bin/agentbox flags=(unconfined) {\n  userns,\n}", "apparmor_parser -r /etc/apparmor.d/agentbox"}},
		{name: "ubuntu apparmor other binary", stage: Mount, err: syscall.EPERM, facts: with(func(f *Facts) { f.AppArmorRestrictUserns = 1; f.Binary = "/home/al/go/bin/agentbox" }),
			cause: "may not mount", want: []string{"profile agentbox /home/al/go/bin/agentbox flags=(unconfined)"}, notWant: []string{"/usr/bin/agentbox", defaultBinary}},
		{name: "ubuntu apparmor under seccomp", stage: Mount, err: syscall.EPERM, facts: with(func(f *Facts) { f.AppArmorRestrictUserns = 1; f.Seccomp = 2 }),
			cause: "AppArmor", want: []string{"profile agentbox /usr/bin/agentbox"}},
		{name: "mount EPERM seccomp", stage: Mount, err: syscall.EPERM, facts: with(func(f *Facts) { f.Seccomp = 2 }),
			cause: "may not mount", want: []string{"seccomp profile", "mount_setattr", "AppArmor"}},
		{name: "mount EPERM other", stage: Mount, err: syscall.EPERM, facts: base,
			cause: "may not mount", want: []string{"SELinux", "kernel.apparmor_restrict_unprivileged_userns", "profile agentbox /usr/bin/agentbox flags=(unconfined)", "seccomp"}},
		{name: "unknown mount", stage: Mount, err: syscall.ENOENT, facts: base, cause: "mounts could not be set up", want: []string{"exist and are directories"}, noUserns: true},
		{name: "unknown clone", stage: Clone, err: syscall.EAGAIN, facts: base, cause: "could not be started", want: []string{"ulimit -u"}, noUserns: true},
		{name: "no errno", stage: Clone, err: errors.New("exec: not started"), facts: with(func(f *Facts) { f.MaxUserNamespaces = 0 }), cause: "could not be started", noUserns: true},
	} {
		c := Diagnose(tc.stage, tc.err, tc.facts)
		if c.Userns == tc.noUserns {
			t.Errorf("%s: Diagnose(%v, %v).Userns = %v, want %v", tc.name, tc.stage, tc.err, c.Userns, !tc.noUserns)
		}
		if !strings.Contains(c.Cause, tc.cause) {
			t.Errorf("%s: Diagnose(%v, %v).Cause = %q, want it to contain %q", tc.name, tc.stage, tc.err, c.Cause, tc.cause)
		}
		for _, want := range tc.want {
			if !strings.Contains(c.Remedy, want) {
				t.Errorf("%s: Diagnose(%v, %v).Remedy = %q, want it to contain %q", tc.name, tc.stage, tc.err, c.Remedy, want)
			}
		}
		for _, bad := range tc.notWant {
			if strings.Contains(c.Remedy, bad) {
				t.Errorf("%s: Diagnose(%v, %v).Remedy = %q, want no %q", tc.name, tc.stage, tc.err, c.Remedy, bad)
			}
		}
		if got := c.String(); got != c.Cause+"; "+c.Remedy {
			t.Errorf("%s: Cause.String() = %q", tc.name, got)
		}
	}
}

func TestAppArmorProfile(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"/opt/agentbox", "profile agentbox /opt/agentbox flags=(unconfined) {"},
		{"", "profile agentbox /usr/local/bin/agentbox flags=(unconfined) {"},
		{"/opt/my tools/agentbox", `profile agentbox "/opt/my tools/agentbox" flags=(unconfined) {`},
	} {
		got := AppArmorProfile(tc.path)
		for _, want := range []string{"abi <abi/4.0>,\n", "include <tunables/global>\n", tc.want + "\n", "  userns,\n", "}\n"} {
			if !strings.Contains(got, want) {
				t.Errorf("AppArmorProfile(%q) = %q, want it to contain %q", tc.path, got, want)
			}
		}
	}
}
