//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/landlock"
)

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/tmp", true}, {"/tmp/x", true}, {"/tmpfoo", false}, {"/var/tmp/a/b", true}, {"/var/tmpx", false},
		{"/dev/shm/x", true}, {"/home/a/tmp", false}, {"/", false},
	} {
		if got := under(tc.p, "/tmp", "/var/tmp", "/dev/shm"); got != tc.want {
			t.Errorf("under(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755)
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("x"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	vars := []string{"PATH=/nonexistent:" + dir}
	for _, tc := range []struct {
		name string
		code int
		path string
	}{
		{"tool", 0, exe},
		{exe, 0, exe},
		{"missing", ExitNotFound, ""},
		{dir + "/missing", ExitNotFound, ""},
		{"sub", ExitCannotExec, ""},
		{dir + "/sub", ExitCannotExec, ""},
		{"", ExitNotFound, ""},
	} {
		p, code, err := lookPath(tc.name, vars)
		if code != tc.code || p != tc.path || (err == nil) != (tc.code == 0) {
			t.Errorf("lookPath(%q) = %q, %d, %v; want %q, %d", tc.name, p, code, err, tc.path, tc.code)
		}
	}
	if os.Geteuid() != 0 { // root can execute a 0644 file's access check
		if _, code, _ := lookPath(plain, vars); code != ExitCannotExec {
			t.Errorf("lookPath(0644 file) code = %d, want %d", code, ExitCannotExec)
		}
	}
}

func TestExitCode(t *testing.T) {
	if got := ExitCode(errors.New("x")); got != ExitSetup {
		t.Errorf("ExitCode(plain) = %d, want %d", got, ExitSetup)
	}
	if got := ExitCode(&Error{Code: 127, Err: errors.New("x")}); got != 127 {
		t.Errorf("ExitCode(127) = %d, want 127", got)
	}
}

func TestInitErrorNamesHostTmp(t *testing.T) {
	err := initError(Config{Argv: []string{"/tmp/x/bin/tool"}, Dir: "/"}, initMsg{Event: "error", Code: ExitNotFound, NotFound: true, Msg: "nope"})
	// The file does not exist on the host either: the plain message.
	if ExitCode(err) != ExitNotFound || err.Error() != "nope" {
		t.Errorf("initError(missing) = %v (%d)", err, ExitCode(err))
	}
}

func TestInitErrorNamesHostTmpInstall(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "agentbox-unit-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	tool := filepath.Join(dir, "tool")
	os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755)
	for _, argv0 := range []string{tool, "tool"} {
		cfg := Config{Argv: []string{argv0}, Dir: "/", Env: []string{"PATH=/usr/bin:" + dir}}
		err := initError(cfg, initMsg{Event: "error", Code: ExitNotFound, NotFound: true, Msg: "nope"})
		if ExitCode(err) != ExitNotFound || !strings.Contains(err.Error(), "installed at "+tool) || !strings.Contains(err.Error(), "private") {
			t.Errorf("initError(%s) = %v (%d), want 127 naming %s and why", argv0, err, ExitCode(err), tool)
		}
	}
}

func TestDegradedPolicy(t *testing.T) {
	in := landlock.Policy{Mode: landlock.Require, Scopes: true, Write: []landlock.Rule{
		{Path: "/home/u/p", Source: "working directory"}, {Path: "/tmp"}, {Path: "/var/tmp"}, {Path: "/dev/shm"}, {Path: "/run/user/1000"},
		{Path: "/home/u/.cache", Source: "profile default"},
	}}
	out := degradedPolicy(in, "/run/user/1000", "/s/id/tmp", "/s/id/var-tmp", "/s/id/run")
	var got []string
	for _, r := range out.Write {
		got = append(got, r.Path)
	}
	want := []string{"/home/u/p", "/home/u/.cache", "/s/id/tmp", "/s/id/var-tmp", "/s/id/run"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("degradedPolicy writes %v, want %v (never the host's /tmp, /var/tmp, /dev/shm)", got, want)
	}
	if len(in.Write) != 6 {
		t.Errorf("degradedPolicy changed its input")
	}
}
