package env

import (
	"slices"
	"strings"
	"testing"
)

func TestBuild(t *testing.T) {
	s := Session{ID: "0123456789ab", RuntimeDir: "/run/user/1000"}
	tail := []string{"TMPDIR=/tmp", "TMP=/tmp", "TEMP=/tmp", "TEMPDIR=/tmp", "XDG_RUNTIME_DIR=/run/user/1000", "AGENTBOX_SESSION=0123456789ab"}
	for _, tc := range []struct {
		name string
		base []string
		want []string
	}{
		{"empty", nil, tail},
		{"passthrough keeps order and values", []string{"B=2", "A=1", "PATH=/usr/bin:/bin", "EMPTY="}, append([]string{"B=2", "A=1", "PATH=/usr/bin:/bin", "EMPTY="}, tail...)},
		{"overrides temp vars", []string{"TMPDIR=/var/tmp/x", "X=1", "TMP=/t", "TEMP=/t", "TEMPDIR=/t", "XDG_RUNTIME_DIR=/run/user/1000/host"}, append([]string{"X=1"}, tail...)},
		{"overrides a spoofed session", []string{"AGENTBOX_SESSION=evil"}, tail},
		{"drops an inherited nest socket", []string{"AGENTBOX_NEST=/run/user/1000/outer.sock", "X=1"}, append([]string{"X=1"}, tail...)},
		{"duplicates: last wins", []string{"A=1", "B=x", "A=2"}, append([]string{"B=x", "A=2"}, tail...)},
		{"drops malformed", []string{"NOEQUALS", "=value", "OK=1"}, append([]string{"OK=1"}, tail...)},
		{"value with =", []string{"A=b=c"}, append([]string{"A=b=c"}, tail...)},
	} {
		if got := Build(tc.base, s); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Build(%q) = %q, want %q", tc.name, tc.base, got, tc.want)
		}
	}
}

func TestBuildNest(t *testing.T) {
	got := Build([]string{"AGENTBOX_NEST=/evil", "A=1"}, Session{ID: "i", RuntimeDir: "/r", Nest: "/r/agentbox-nest.sock"})
	want := []string{"A=1", "TMPDIR=/tmp", "TMP=/tmp", "TEMP=/tmp", "TEMPDIR=/tmp", "XDG_RUNTIME_DIR=/r", "AGENTBOX_SESSION=i", "AGENTBOX_NEST=/r/agentbox-nest.sock"}
	if !slices.Equal(got, want) {
		t.Errorf("Build with Nest = %q, want %q", got, want)
	}
}

func TestBuildDoesNotModifyBase(t *testing.T) {
	base := []string{"TMPDIR=/x", "A=1"}
	Build(base, Session{ID: "i", RuntimeDir: "/r"})
	if !slices.Equal(base, []string{"TMPDIR=/x", "A=1"}) {
		t.Errorf("Build modified its input: %q", base)
	}
}

func TestLookup(t *testing.T) {
	vars := []string{"A=1", "B=2", "A=3"}
	if v, ok := Lookup(vars, "A"); v != "3" || !ok {
		t.Errorf("Lookup(A) = %q, %v, want 3, true", v, ok)
	}
	if v, ok := Lookup(vars, "C"); ok {
		t.Errorf("Lookup(C) = %q, %v, want false", v, ok)
	}
}

func FuzzBuild(f *testing.F) {
	f.Add("A=1\x00TMPDIR=/x\x00A=2", "id", "/run/user/1")
	f.Fuzz(func(t *testing.T, joined, id, rd string) {
		out := Build(strings.Split(joined, "\x00"), Session{ID: id, RuntimeDir: rd})
		seen := map[string]bool{}
		for _, kv := range out {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || k == "" || seen[k] {
				t.Fatalf("Build output %q: entry %q malformed or duplicate", out, kv)
			}
			seen[k] = true
		}
		for _, v := range TempVars {
			if got, _ := Lookup(out, v); got != TmpDir {
				t.Fatalf("%s = %q, want %s", v, got, TmpDir)
			}
		}
		if got, _ := Lookup(out, "AGENTBOX_SESSION"); got != id {
			t.Fatalf("AGENTBOX_SESSION = %q, want %q", got, id)
		}
	})
}
