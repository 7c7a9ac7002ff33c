package remedy

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

func TestDiagnose(t *testing.T) {
	base := Facts{MaxUserNamespaces: 15000, UnprivilegedUsernsClone: -1, AppArmorRestrictUserns: -1, Seccomp: 0, Binary: "/usr/bin/agentbox"}
	with := func(mod func(*Facts)) Facts { f := base; mod(&f); return f }
	for _, tc := range []struct {
		name        string
		stage       Stage
		err         error
		facts       Facts
		cause, want string
	}{
		{"max_user_namespaces=0", Clone, syscall.ENOSPC, with(func(f *Facts) { f.MaxUserNamespaces = 0 }), "max_user_namespaces = 0", "sysctl -w user.max_user_namespaces=15000"},
		{"limit exhausted", Clone, syscall.ENOSPC, base, "exhausted", "sysctl -w user.max_user_namespaces=15000"},
		{"debian sysctl", Clone, fmt.Errorf("fork/exec: %w", syscall.EPERM), with(func(f *Facts) { f.UnprivilegedUsernsClone = 0 }), "unprivileged_userns_clone = 0", "sysctl -w kernel.unprivileged_userns_clone=1"},
		{"container seccomp", Clone, syscall.EPERM, with(func(f *Facts) { f.Seccomp = 2 }), "seccomp", "seccomp profile"},
		{"clone EPERM other", Clone, syscall.EPERM, base, "EPERM", "seccomp policy"},
		{"clone EINVAL", Clone, syscall.EINVAL, base, "EINVAL", "CONFIG_USER_NS"},
		{"ubuntu apparmor", Mount, syscall.EPERM, with(func(f *Facts) { f.AppArmorRestrictUserns = 1 }), "AppArmor", "profile agentbox /usr/bin/agentbox flags=(unconfined) {\n  userns,\n}"},
		{"mount EPERM other", Mount, syscall.EPERM, base, "may not mount", "SELinux"},
		{"unknown mount", Mount, syscall.ENOENT, base, "mounts could not be set up", "exist and are directories"},
		{"unknown clone", Clone, syscall.EAGAIN, base, "could not be started", "ulimit -u"},
	} {
		c := Diagnose(tc.stage, tc.err, tc.facts)
		if wantUserns := !strings.HasPrefix(tc.name, "unknown"); c.Userns != wantUserns {
			t.Errorf("%s: Diagnose(%v, %v).Userns = %v, want %v", tc.name, tc.stage, tc.err, c.Userns, wantUserns)
		}
		if !strings.Contains(c.Cause, tc.cause) || !strings.Contains(c.Remedy, tc.want) {
			t.Errorf("%s: Diagnose(%v, %v) = %q / %q, want cause ~%q, remedy ~%q", tc.name, tc.stage, tc.err, c.Cause, c.Remedy, tc.cause, tc.want)
		}
	}
}

func TestAppArmorProfile(t *testing.T) {
	got := AppArmorProfile("/opt/agentbox")
	for _, want := range []string{"abi <abi/4.0>,", "include <tunables/global>", "profile agentbox /opt/agentbox flags=(unconfined)", "userns,"} {
		if !strings.Contains(got, want) {
			t.Errorf("AppArmorProfile = %q, want it to contain %q", got, want)
		}
	}
}
