//go:build linux

package tests

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestIdentity checks that the command runs as the caller's own uid and gid,
// without any capability and with no_new_privs, as PID 1's child in its own
// PID namespace: for both test users and for root.
func TestIdentity(t *testing.T) {
	t.Parallel()
	a, b := users(t)
	for _, u := range []user{a, b, rootUser} {
		t.Run(u.Name, func(t *testing.T) {
			t.Parallel()
			var root string
			if u.UID == 0 {
				root = filepath.Join(scratch(t), "root")
			} else {
				root = filepath.Join(u.project(t), "root")
			}
			r := u.box(t, nil, "--root", root, "--", "sh", "-c", `
echo "uid=$(id -u)"
echo "gid=$(id -g)"
grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status | tr -d ' \t' | sed 's/:/=/'
echo "pid1=$(tr '\0' ' ' < /proc/1/cmdline)"
`)
			wantCode(t, "agentbox -- sh", r, 0)
			got := map[string]string{}
			for _, l := range lines(string(r.stdout)) {
				k, v, _ := strings.Cut(l, "=")
				got[k] = v
			}
			want := map[string]string{
				"uid":    strconv.Itoa(u.UID),
				"gid":    strconv.Itoa(u.GID),
				"CapInh": "0000000000000000",
				"CapPrm": "0000000000000000",
				"CapEff": "0000000000000000",
				"CapAmb": "0000000000000000",
				// The bounding set matters for root: uid 0 would regain
				// every capability in it at the next execve.
				"CapBnd":     "0000000000000000",
				"NoNewPrivs": "1",
				"pid1":       "agentbox:init ",
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("inside, %s = %q, want %q (output %q)", k, got[k], w, r.stdout)
				}
			}
		})
	}
}

// TestEnvironment checks the command's environment exactly: the temp
// variables are /tmp whatever the caller had, XDG_RUNTIME_DIR and
// AGENTBOX_SESSION name this session, every other variable passes through
// byte for byte, and no name occurs twice. It also checks the session
// directory's layout (kept with --keep) and the runtime directory's owner,
// mode and writability.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	p := a.project(t)
	root := filepath.Join(p, "root")
	caller := []string{
		"FOO=a b=c",
		"EMPTY=",
		"MULTI=line1\nline2",
		"TMPDIR=/caller/tmpdir",
		"TEMP=/caller/temp",
		"XDG_RUNTIME_DIR=/caller/run",
		"AGENTBOX_SESSION=forged",
		"LANG=C.UTF-8",
	}
	r := a.box(t, caller, "--keep", "--root", root, "--", "env", "-0")
	wantCode(t, "agentbox -- env -0", r, 0)
	id, path := keptSession(t, r.stderr)
	if path != filepath.Join(root, id) {
		t.Errorf("kept session path %s, want %s", path, filepath.Join(root, id))
	}

	got := map[string]string{}
	for _, kv := range bytes.Split(bytes.TrimSuffix(r.stdout, []byte{0}), []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			t.Errorf("environment entry %q has no '='", kv)
			continue
		}
		if _, dup := got[k]; dup {
			t.Errorf("environment has %s more than once", k)
		}
		got[k] = v
	}
	want := map[string]string{}
	for _, kv := range mergeEnv(a.Env(), caller) {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for _, k := range []string{"TMPDIR", "TMP", "TEMP", "TEMPDIR"} {
		want[k] = "/tmp"
	}
	want["AGENTBOX_SESSION"] = id
	want["XDG_RUNTIME_DIR"] = fmt.Sprintf("/tmp/.agentbox-run-%d", a.UID)
	if st, err := os.Stat("/run/user"); err == nil && st.IsDir() {
		want["XDG_RUNTIME_DIR"] = fmt.Sprintf("/run/user/%d", a.UID)
	}
	want["AGENTBOX_NEST"] = want["XDG_RUNTIME_DIR"] + "/agentbox-nest.sock"
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("inside, %s = %q (set: %v), want %q", k, g, ok, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("inside, unexpected variable %s=%q", k, g)
		}
	}

	// The kept session's layout on the host.
	checkMode := func(rel string, dir bool, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(path, rel)
		st, err := os.Lstat(p)
		if err != nil {
			t.Error(err)
			return
		}
		if st.IsDir() != dir || st.Mode().Perm() != mode || owner(st) != a.UID {
			t.Errorf("session %s: mode %v, owner %d; want %v%04o owned by %d", p, st.Mode(), owner(st), map[bool]string{true: "d", false: "-"}[dir], mode, a.UID)
		}
	}
	checkMode("", true, 0o700)
	checkMode("state", false, 0o600)
	for _, d := range []string{"tmp", "var-tmp", "run"} {
		checkMode(d, true, 0o700)
	}
	if rec := readState(t, path); rec.ID != id || rec.State != "kept" || rec.UID != a.UID || rec.Command != "env" {
		t.Errorf("state of the kept session: %+v, want id %s, state kept, uid %d, command env", rec, id, a.UID)
	}
	if rows, cr := a.clean(t, root, id); cr.code != 0 || len(rows) != 1 || rows[0].Action != "removed" {
		t.Errorf("agentbox clean %s: %+v (%v)", id, rows, cr)
	}

	// The private directories as the command sees them.
	r = a.box(t, nil, "--root", root, "--", "sh", "-c", `
for d in /tmp /var/tmp "$XDG_RUNTIME_DIR"; do stat -c "$d %a %u %g %F" "$d"; done
echo hello > "$XDG_RUNTIME_DIR/w" && cat "$XDG_RUNTIME_DIR/w"
`)
	wantCode(t, "agentbox -- sh (private dirs)", r, 0)
	var wantOut []string
	for _, d := range []string{"/tmp", "/var/tmp", want["XDG_RUNTIME_DIR"]} {
		wantOut = append(wantOut, fmt.Sprintf("%s 700 %d %d directory", d, a.UID, a.GID))
	}
	wantOut = append(wantOut, "hello")
	if g := lines(string(r.stdout)); !slices.Equal(g, wantOut) {
		t.Errorf("private dirs inside: %q, want %q", g, wantOut)
	}
}

// owner returns the uid that owns what st describes.
func owner(st os.FileInfo) int { return int(st.Sys().(*syscall.Stat_t).Uid) }
