package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		in        []string
		cli, argv []string
	}{
		{[]string{"agentbox"}, []string{"agentbox"}, nil},
		{[]string{"agentbox", "--", "help"}, []string{"agentbox"}, []string{"help"}},
		{[]string{"agentbox", "--", "clean", "--", "x"}, []string{"agentbox"}, []string{"clean", "--", "x"}},
		{[]string{"agentbox", "-v", "run", "--keep", "--", "ls", "-l"}, []string{"agentbox", "-v", "run", "--keep"}, []string{"ls", "-l"}},
		{[]string{"agentbox", "--"}, []string{"agentbox"}, []string{}},
		{[]string{"agentbox", "ps"}, []string{"agentbox", "ps"}, nil},
		{[]string{"--"}, []string{"--"}, nil}, // argv[0] is never the separator
	} {
		cli, argv := SplitArgs(tc.in)
		if !slices.Equal(cli, tc.cli) || !slices.Equal(argv, tc.argv) || (argv == nil) != (tc.argv == nil) {
			t.Errorf("SplitArgs(%q) = %q, %q; want %q, %q", tc.in, cli, argv, tc.cli, tc.argv)
		}
	}
}

func TestSplitArgsDoesNotAlias(t *testing.T) {
	in := []string{"agentbox", "--", "x"}
	cli, _ := SplitArgs(in)
	cli = append(cli, "y")
	if in[1] != "--" {
		t.Errorf("appending to the CLI half changed the input: %q", in)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agentbox"}, "no command"},
		{[]string{"agentbox", "opencode"}, `unexpected argument "opencode"`},
		{[]string{"agentbox", "--"}, "no command after --"},
		{[]string{"agentbox", "--bogus", "--", "true"}, "bogus"},
		{[]string{"agentbox", "ps", "--", "true"}, "ps takes no command"},
		{[]string{"agentbox", "clean", "--", "true"}, "clean takes no command"},
	} {
		var out, errb bytes.Buffer
		code := Main(tc.args, &out, &errb)
		if code != 125 || !strings.Contains(errb.String(), tc.want) || out.Len() != 0 {
			t.Errorf("Main(%q) = %d, stderr %q, stdout %q; want 125, stderr ~%q, no stdout", tc.args, code, errb.String(), out.String(), tc.want)
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"agentbox", "--help"}, {"agentbox", "--version"}, {"agentbox", "run", "--help"}} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code != 0 || out.Len() == 0 {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 0 and output", args, code, out.String(), errb.String())
		}
	}
}
