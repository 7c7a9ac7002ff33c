package doctor

import (
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/remedy"
	"github.com/agentbox/agentbox/landlock"
)

const uid = 1000

// good is a host where every finding is ok.
func good() Facts {
	return Facts{
		UID:    uid,
		Userns: remedy.Facts{MaxUserNamespaces: 15000, UnprivilegedUsernsClone: -1, AppArmorRestrictUserns: -1},
		Landlock: LandlockFacts{ABI: 7, Mode: landlock.Require, Enforced: true,
			Summary: "landlock ABI 7: enforced write rights (write_file), scopes abstract_unix_socket, signal"},
		Root: RootFacts{Path: "/home/u/.local/state/agentbox", Source: "HOME", Owner: uid, Mode: 0o700,
			FreeBytes: 10 << 30, Sessions: 2, Live: 1},
		TmpMode: 0o1777, TmpIsDir: true,
		ProtectedSymlinks: 1, LegacyTIOCSTI: 0,
		RuntimeDir: RuntimeDirFacts{Set: true, Path: "/run/user/1000", IsDir: true, Owner: uid, Mode: 0o700},
		Binary: BinaryFacts{Path: "/usr/local/bin/agentbox", Owner: 0, Mode: 0o755, DirOwner: 0, DirMode: 0o755,
			Home: "/home/u", WorkDir: "/home/u/project"},
	}
}

func find(t *testing.T, fs []Finding, name string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no finding %q in %v", name, fs)
	return Finding{}
}

func TestEvaluateGood(t *testing.T) {
	fs := Evaluate(good())
	want := []string{NameNamespaces, NameLandlock, NameSeccomp, NameNesting, NameRoot, NameTmp, NameSymlinks, NameTIOCSTI, NameRuntimeDir, NameBinary}
	if len(fs) != len(want) {
		t.Fatalf("Evaluate(good) = %d findings, want %d: %v", len(fs), len(want), fs)
	}
	for i, f := range fs {
		if f.Name != want[i] {
			t.Errorf("finding %d = %q, want %q", i, f.Name, want[i])
		}
		if f.Status != StatusOK || f.Remedy != "" || f.Detail == "" {
			t.Errorf("Evaluate(good) %s = %s %q remedy %q, want ok with a detail and no remedy", f.Name, f.Status, f.Detail, f.Remedy)
		}
	}
	if !OK(fs) {
		t.Errorf("OK(Evaluate(good)) = false, want true")
	}
}

func TestOK(t *testing.T) {
	for _, tc := range []struct {
		statuses []Status
		want     bool
	}{
		{nil, true},
		{[]Status{StatusOK, StatusOK}, true},
		{[]Status{StatusOK, StatusWarn}, false},
		{[]Status{StatusFail, StatusOK}, false},
	} {
		var fs []Finding
		for _, s := range tc.statuses {
			fs = append(fs, Finding{Status: s})
		}
		if got := OK(fs); got != tc.want {
			t.Errorf("OK(%v) = %v, want %v", tc.statuses, got, tc.want)
		}
	}
}

// TestEvaluate changes one fact of a good host per case and checks the
// finding it feeds: its status, and words its detail and remedy must hold.
func TestEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		finding string
		change  func(*Facts)
		status  Status
		detail  string // substring of Detail
		remedy  string // substring of Remedy ("" for ok)
	}{
		// namespaces
		{"probe ran", NameNamespaces, func(f *Facts) {}, StatusOK, "user.max_user_namespaces=15000", ""},
		{"probe skipped", NameNamespaces, func(f *Facts) { f.Sandbox.Skipped = "no usable home directory" }, StatusFail, "not run: no usable home", "HOME"},
		{"command failed", NameNamespaces, func(f *Facts) { f.Sandbox.Code = 1 }, StatusFail, "status 1", "agentbox -v"},
		{"max_user_namespaces 0", NameNamespaces, func(f *Facts) {
			f.Sandbox.Err = "clone: no space left on device"
			f.Userns.MaxUserNamespaces = 0
		}, StatusFail, "clone: no space left on device", "sysctl -w user.max_user_namespaces=15000"},
		{"unprivileged_userns_clone 0", NameNamespaces, func(f *Facts) {
			f.Sandbox.Err = "clone: operation not permitted"
			f.Userns.UnprivilegedUsernsClone = 0
		}, StatusFail, "kernel.unprivileged_userns_clone=0", "sysctl -w kernel.unprivileged_userns_clone=1"},
		{"apparmor restricts userns", NameNamespaces, func(f *Facts) {
			f.Sandbox.Err = "mount: operation not permitted"
			f.Userns.AppArmorRestrictUserns = 1
			f.Userns.Binary = "/opt/agentbox"
		}, StatusFail, "apparmor_restrict_unprivileged_userns=1", "profile agentbox /opt/agentbox"},
		{"seccomp filter", NameNamespaces, func(f *Facts) {
			f.Sandbox.Err = "clone: operation not permitted"
			f.Userns.Seccomp = 2
		}, StatusFail, "operation not permitted", "seccomp"},
		{"cgo build", NameNamespaces, func(f *Facts) {
			f.Sandbox.Err = "capset: operation not supported"
			f.Cgo = true
		}, StatusFail, "built with cgo", "CGO_ENABLED=0"},
		{"cgo build, probe ok", NameNamespaces, func(f *Facts) { f.Cgo = true }, StatusOK, "namespaces work", ""},
		{"other error", NameNamespaces, func(f *Facts) { f.Sandbox.Err = "pipe2: too many open files" }, StatusFail, "too many open files", "agentbox -v"},

		// landlock
		{"ABI 7", NameLandlock, func(f *Facts) {}, StatusOK, "landlock ABI 7", ""},
		{"no landlock, require", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABIErr: "function not implemented", CheckErr: "landlock unavailable or too old: …"}
		}, StatusFail, "unavailable (function not implemented)", "--landlock=best-effort"},
		{"old ABI, require", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABI: 3, CheckErr: "landlock unavailable or too old: this kernel offers Landlock ABI 3"}
		}, StatusFail, "ABI 3", "Linux >= 6.12"},
		{"old ABI, best effort", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABI: 5, Mode: landlock.BestEffort, Enforced: true, Unenforced: []string{"scope:signal"}, Summary: "landlock ABI 5: …"}
		}, StatusWarn, "landlock ABI 5", "to enforce scope:signal"},
		{"below MinABI, all enforced", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABI: landlock.MinABI - 1, Mode: landlock.Require, Enforced: true, Summary: "landlock ABI 5: …"}
		}, StatusWarn, "below ABI 6", "Linux >= 6.12"},
		{"no landlock, best effort", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABIErr: "operation not supported", Mode: landlock.BestEffort, Summary: "landlock unavailable (ABI 0), best-effort: nothing enforced"}
		}, StatusFail, "nothing enforced", "Landlock enabled"},
		{"off by config", NameLandlock, func(f *Facts) {
			f.Landlock = LandlockFacts{ABI: 7, Mode: landlock.Off, Summary: "landlock off: nothing enforced (the kernel offers ABI 7)"}
		}, StatusWarn, "landlock off", `landlock = "off"`},

		// seccomp
		{"no filter", NameSeccomp, func(f *Facts) {}, StatusOK, "no seccomp filter", ""},
		{"filter", NameSeccomp, func(f *Facts) { f.Seccomp, f.SeccompFilters, f.NoNewPrivs = 2, 3, 1 }, StatusOK, "3 seccomp filter(s)", ""},
		{"strict", NameSeccomp, func(f *Facts) { f.Seccomp = 1 }, StatusFail, "strict", "outside"},
		{"unreadable", NameSeccomp, func(f *Facts) { f.Seccomp = -1 }, StatusWarn, "could not be read", "/proc"},

		// nesting
		{"host", NameNesting, func(f *Facts) {}, StatusOK, "not inside", ""},
		{"container", NameNesting, func(f *Facts) { f.Nesting.Container = "docker: /.dockerenv exists" }, StatusOK, "inside a container (docker", ""},
		{"other sandbox", NameNesting, func(f *Facts) { f.NoNewPrivs = 1 }, StatusOK, "another sandbox", ""},
		{"agentbox env", NameNesting, func(f *Facts) { f.Nesting.AgentboxSession = "0123456789ab" }, StatusWarn, "AGENTBOX_SESSION=0123456789ab", "outside the other session"},
		{"agentbox with nest socket", NameNesting, func(f *Facts) {
			f.Nesting.AgentboxSession, f.Nesting.NestSocket = "0123456789ab", "/run/user/1000/agentbox-nest.sock"
		}, StatusOK, "nested sessions are built by its init", ""},
		{"agentbox pid 1", NameNesting, func(f *Facts) { f.Nesting.PID1Agentbox = true }, StatusWarn, "PID 1 is agentbox's init", "outside the other session"},

		// session root
		{"root ok", NameRoot, func(f *Facts) {}, StatusOK, "/home/u/.local/state/agentbox (from HOME), owner uid 1000, mode 0700, 10.0 GiB free, 2 session(s): 1 live, 0 abandoned", ""},
		{"root abandoned", NameRoot, func(f *Facts) { f.Root.Abandoned = 1 }, StatusOK, "agentbox clean", ""},
		{"root squatted", NameRoot, func(f *Facts) {
			f.Root = RootFacts{Err: "session root /tmp/agentbox-1000: owned by uid 1002, mode 0777 (you are uid 1000): refusing"}
		}, StatusFail, "owned by uid 1002", "--root DIR"},
		{"root full", NameRoot, func(f *Facts) { f.Root.FreeBytes = 10 << 20 }, StatusWarn, "10.0 MiB free", "agentbox clean"},
		{"root statfs", NameRoot, func(f *Facts) { f.Root.StatfsErr = "input/output error" }, StatusWarn, "statfs: input/output error", "file system"},
		{"root list", NameRoot, func(f *Facts) { f.Root.ListErr = "permission denied" }, StatusWarn, "listing: permission denied", "0700"},

		// /tmp
		{"tmp sticky", NameTmp, func(f *Facts) {}, StatusOK, "mode 1777", ""},
		{"tmp not sticky", NameTmp, func(f *Facts) { f.TmpMode = 0o777 }, StatusWarn, "without the sticky bit", "chmod 1777 /tmp"},
		{"tmp private", NameTmp, func(f *Facts) { f.TmpMode = 0o700 }, StatusOK, "mode 0700", ""},
		{"tmp missing", NameTmp, func(f *Facts) { f.TmpErr = "no such file or directory" }, StatusWarn, "no such file", "mkdir -m 1777 /tmp"},
		{"tmp symlink", NameTmp, func(f *Facts) { f.TmpIsDir = false }, StatusWarn, "not a directory", "mode 1777"},

		// fs.protected_symlinks
		{"symlinks 1", NameSymlinks, func(f *Facts) {}, StatusOK, "1:", ""},
		{"symlinks 0", NameSymlinks, func(f *Facts) { f.ProtectedSymlinks = 0 }, StatusWarn, "0:", "sysctl -w fs.protected_symlinks=1"},
		{"symlinks unreadable", NameSymlinks, func(f *Facts) { f.ProtectedSymlinks = -1 }, StatusWarn, "could not be read", "fs.protected_symlinks=1"},

		// dev.tty.legacy_tiocsti
		{"tiocsti 0", NameTIOCSTI, func(f *Facts) {}, StatusOK, "0:", ""},
		{"tiocsti 1", NameTIOCSTI, func(f *Facts) { f.LegacyTIOCSTI = 1 }, StatusOK, "seccomp filter refuses it", ""},
		{"tiocsti absent", NameTIOCSTI, func(f *Facts) { f.LegacyTIOCSTI = -1 }, StatusOK, "before 6.2", ""},

		// XDG_RUNTIME_DIR
		{"runtime ok", NameRuntimeDir, func(f *Facts) {}, StatusOK, "/run/user/1000: owner uid 1000, mode 0700", ""},
		{"runtime unset", NameRuntimeDir, func(f *Facts) { f.RuntimeDir = RuntimeDirFacts{} }, StatusOK, "unset", ""},
		{"runtime relative", NameRuntimeDir, func(f *Facts) { f.RuntimeDir.Path = "run" }, StatusWarn, "not an absolute path", "unset XDG_RUNTIME_DIR"},
		{"runtime missing", NameRuntimeDir, func(f *Facts) { f.RuntimeDir.Err = "lstat: no such file or directory" }, StatusWarn, "no such file", "pam_systemd"},
		{"runtime file", NameRuntimeDir, func(f *Facts) { f.RuntimeDir.IsDir = false }, StatusWarn, "not a directory", "pam_systemd"},
		{"runtime other owner", NameRuntimeDir, func(f *Facts) { f.RuntimeDir.Owner = 1002 }, StatusWarn, "owned by uid 1002, mode 0700 (you are uid 1000)", "unset XDG_RUNTIME_DIR"},
		{"runtime mode", NameRuntimeDir, func(f *Facts) { f.RuntimeDir.Mode = 0o755 }, StatusWarn, "mode 0755, want 0700", "chmod 0700 /run/user/1000"},

		// binary
		{"binary root-owned", NameBinary, func(f *Facts) {}, StatusOK, "/usr/local/bin/agentbox: owner uid 0, mode 0755", ""},
		{"binary sticky dir", NameBinary, func(f *Facts) { f.Binary.Path, f.Binary.DirMode = "/tmp/agentbox", 0o1777 }, StatusOK, "/tmp/agentbox", ""},
		{"binary own file", NameBinary, func(f *Facts) { f.Binary.Owner = uid }, StatusWarn, "the file is yours", "/usr/local/bin"},
		{"binary writable file", NameBinary, func(f *Facts) { f.Binary.Mode = 0o777 }, StatusWarn, "the file is mode 0777", "/usr/local/bin"},
		{"binary own dir", NameBinary, func(f *Facts) { f.Binary.DirOwner = uid }, StatusWarn, "its directory /usr/local/bin is yours", "/usr/local/bin"},
		{"binary group-writable dir", NameBinary, func(f *Facts) { f.Binary.DirMode = 0o775 }, StatusWarn, "mode 0775", "/usr/local/bin"},
		{"binary in home", NameBinary, func(f *Facts) { f.Binary.Path = "/home/u/go/bin/agentbox" }, StatusWarn, "in your home /home/u", "/usr/local/bin"},
		{"binary in home prefix only", NameBinary, func(f *Facts) { f.Binary.Path, f.Binary.WorkDir = "/home/us/agentbox", "/srv/p" }, StatusOK, "/home/us/agentbox", ""},
		{"binary in work dir", NameBinary, func(f *Facts) { f.Binary.Path, f.Binary.Home, f.Binary.WorkDir = "/srv/p/bin/agentbox", "", "/srv/p" }, StatusWarn, "working directory /srv/p", "/usr/local/bin"},
		{"binary work dir /", NameBinary, func(f *Facts) { f.Binary.WorkDir = "/" }, StatusOK, "/usr/local/bin/agentbox", ""},
		{"binary root caller", NameBinary, func(f *Facts) { f.UID = 0; f.RuntimeDir.Owner = 0 }, StatusOK, "owner uid 0", ""},
		{"binary unknown", NameBinary, func(f *Facts) { f.Binary = BinaryFacts{Err: "readlink /proc/self/exe: no such file"} }, StatusWarn, "readlink", "root-owned"},
	}
	for _, tc := range tests {
		t.Run(tc.finding+"/"+tc.name, func(t *testing.T) {
			f := good()
			tc.change(&f)
			got := find(t, Evaluate(f), tc.finding)
			if got.Status != tc.status {
				t.Errorf("Evaluate(%s) status = %s, want %s (%+v)", tc.name, got.Status, tc.status, got)
			}
			if !strings.Contains(got.Detail, tc.detail) {
				t.Errorf("Evaluate(%s) detail = %q, want it to contain %q", tc.name, got.Detail, tc.detail)
			}
			if tc.status == StatusOK && got.Remedy != "" {
				t.Errorf("Evaluate(%s) remedy = %q for an ok finding, want none", tc.name, got.Remedy)
			}
			if tc.status != StatusOK && (got.Remedy == "" || !strings.Contains(got.Remedy, tc.remedy)) {
				t.Errorf("Evaluate(%s) remedy = %q, want it to contain %q", tc.name, got.Remedy, tc.remedy)
			}
		})
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/home/al/x", "/home/al", true},
		{"/home/al", "/home/al", true},
		{"/home/alice/x", "/home/al", false},
		{"/usr/bin/x", "", false},
		{"/home/..x", "/home", true},
	} {
		if got := within(tc.p, tc.dir); got != tc.want {
			t.Errorf("within(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.want)
		}
	}
}
