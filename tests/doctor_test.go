//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// doctorFinding is one element of `agentbox doctor --json`.
type doctorFinding struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	Detail string `json:"detail"`
	Remedy string `json:"remedy"`
}

// doctor runs `agentbox doctor --json args...` as u and checks what holds
// for every run: the output parses, every finding has the four fields, a
// known status and a detail, a remedy exactly when it is not ok, nothing is
// printed on stderr, and the exit status is 0 when every finding is ok and 1
// otherwise.
func (u user) doctor(t *testing.T, args ...string) (map[string]doctorFinding, result) {
	t.Helper()
	r := u.box(t, nil, append([]string{"doctor", "--json"}, args...)...)
	if len(r.stderr) != 0 {
		t.Errorf("agentbox doctor --json %q: stderr %q, want nothing", args, r.stderr)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(r.stdout, &raw); err != nil {
		t.Fatalf("agentbox doctor --json %q: %v (%v)", args, err, r)
	}
	for _, m := range raw {
		for _, k := range []string{"name", "status", "detail", "remedy"} {
			if _, ok := m[k]; !ok {
				t.Errorf("agentbox doctor --json: finding %v has no %q field", m, k)
			}
		}
	}
	var list []doctorFinding
	if err := json.Unmarshal(r.stdout, &list); err != nil {
		t.Fatalf("agentbox doctor --json %q: %v (%v)", args, err, r)
	}
	byName := map[string]doctorFinding{}
	allOK := true
	for _, f := range list {
		if _, dup := byName[f.Name]; dup || f.Name == "" {
			t.Errorf("agentbox doctor --json: finding name %q empty or repeated", f.Name)
		}
		byName[f.Name] = f
		switch f.Status {
		case "ok":
			if f.Remedy != "" {
				t.Errorf("finding %s is ok but has remedy %q", f.Name, f.Remedy)
			}
		case "warn", "fail":
			allOK = false
			if f.Remedy == "" {
				t.Errorf("finding %s is %s without a remedy: %q", f.Name, f.Status, f.Detail)
			}
		default:
			t.Errorf("finding %s: status %q, want ok, warn or fail", f.Name, f.Status)
		}
		if f.Detail == "" {
			t.Errorf("finding %s has no detail", f.Name)
		}
	}
	want := 1
	if allOK {
		want = 0
	}
	wantCode(t, fmt.Sprintf("agentbox doctor --json %q (all ok: %v)", args, allOK), r, want)
	return byName, r
}

// TestDoctor checks agentbox doctor as a user who may create namespaces:
// the probe of the real sandbox reports ok, every finding agentbox knows is
// there, and the text output has one line per finding (and an indented
// remedy under each one that is not ok) with the same statuses.
//
// Not parallel: it checks that the probe's directory in the state home is
// gone, and TestDoctorSquattedRoot makes one there too.
func TestDoctor(t *testing.T) {
	a, _ := users(t)
	findings, r := a.doctor(t)
	for _, name := range []string{"namespaces", "landlock", "seccomp", "nesting", "session root", "/tmp",
		"fs.protected_symlinks", "dev.tty.legacy_tiocsti", "XDG_RUNTIME_DIR", "binary"} {
		if _, ok := findings[name]; !ok {
			t.Errorf("agentbox doctor --json has no %q finding: %s", name, r.stdout)
		}
	}
	if ns := findings["namespaces"]; ns.Status != "ok" {
		t.Errorf("namespaces finding = %+v, want ok: user namespaces work for %s here", ns, a.Name)
	}
	if root := findings["session root"]; root.Status == "fail" || !strings.Contains(root.Detail, filepath.Join(a.Home, ".local/state/agentbox")) {
		t.Errorf("session root finding = %+v, want the default root in %s's home", root, a.Name)
	}
	if b := findings["binary"]; b.Status != "ok" {
		t.Errorf("binary finding = %+v, want ok for the root-owned %s", b, agentboxBin)
	}
	// The probe leaves nothing behind in the state home.
	if left, _ := filepath.Glob(filepath.Join(a.Home, ".local/state/agentbox-doctor-*")); len(left) > 0 {
		t.Errorf("agentbox doctor left %q behind", left)
	}

	text := a.box(t, nil, "doctor")
	wantCode(t, "agentbox doctor", text, r.code)
	if len(text.stderr) != 0 {
		t.Errorf("agentbox doctor: stderr %q, want nothing", text.stderr)
	}
	line := regexp.MustCompile(`^(OK|WARN|FAIL) +(.+?): `)
	seen := 0
	lastOK := true
	for _, l := range lines(string(text.stdout)) {
		if m := line.FindStringSubmatch(l); m != nil {
			seen++
			f, ok := findings[m[2]]
			if !ok {
				t.Errorf("agentbox doctor: line %q names no finding of --json", l)
				continue
			}
			if strings.ToUpper(f.Status) != m[1] {
				t.Errorf("agentbox doctor: line %q, but --json says %s", l, f.Status)
			}
			lastOK = f.Status == "ok"
			continue
		}
		if strings.HasPrefix(l, "      remedy: ") && !lastOK || strings.HasPrefix(l, "        ") {
			continue
		}
		t.Errorf("agentbox doctor: unexpected line %q", l)
	}
	if seen != len(findings) {
		t.Errorf("agentbox doctor printed %d finding lines, --json has %d:\n%s", seen, len(findings), text.stdout)
	}

	wantCode(t, "agentbox doctor extra", a.box(t, nil, "doctor", "extra"), 125)
}

// TestDoctorSquattedRoot checks that doctor reports a session root another
// user controls as a failure, names its owner, and exits 1; the namespace
// probe does not depend on that root.
func TestDoctorSquattedRoot(t *testing.T) {
	a, b := users(t)
	t.Parallel()
	squatted := filepath.Join(scratch(t), "root")
	if err := os.Mkdir(squatted, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(squatted, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(squatted, b.UID, b.GID); err != nil {
		t.Fatal(err)
	}
	findings, r := a.doctor(t, "--root", squatted)
	wantCode(t, "agentbox doctor --root (squatted)", r, 1)
	root := findings["session root"]
	if root.Status != "fail" {
		t.Errorf("session root finding = %+v, want fail", root)
	}
	for _, want := range []string{squatted, fmt.Sprintf("owned by uid %d", b.UID), "mode 0777", fmt.Sprintf("you are uid %d", a.UID)} {
		if !strings.Contains(root.Detail, want) {
			t.Errorf("session root detail %q does not say %q", root.Detail, want)
		}
	}
	if ns := findings["namespaces"]; ns.Status != "ok" {
		t.Errorf("namespaces finding = %+v, want ok whatever --root says", ns)
	}
	if names := entries(t, squatted); len(names) != 0 {
		t.Errorf("agentbox doctor wrote %q into the squatted root", names)
	}
}
