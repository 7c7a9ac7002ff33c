package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/agentbox/agentbox/internal/testenv"
)

const manPage = "docs/agentbox.1"

func TestManPageIsCurrent(t *testing.T) {
	committed, err := os.ReadFile(manPage)
	if err != nil {
		t.Fatalf("%v; generate it with: go run . man > %s", err, manPage)
	}
	if got := runMain(t, "man"); got != string(committed) {
		t.Errorf("%s is stale: it is not what agentbox man prints now; regenerate it with: go run . man > %s", manPage, manPage)
	}
}

func TestManRoffEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"--root DIR", `\-\-root DIR`},
		{`a\b`, `a\eb`},
		{".hidden\n'quoted", `\&.hidden` + "\n" + `\&'quoted`},
		{"it's a.b", "it's a.b"},
	} {
		if got := roffEscape(tc.in); got != tc.want {
			t.Errorf("roffEscape(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// renderMan formats the committed page as text with groff, which must say
// nothing on stderr with every warning enabled.
func renderMan(t *testing.T) string {
	t.Helper()
	groff := testenv.RequireCommand(t, "groff", "groff-base")
	var out, errb bytes.Buffer
	// -P-cbou: plain text, no escape sequences or overstrikes for bold
	// and underline.
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-P-cbou", manPage)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 {
		t.Fatalf("groff -man -Tutf8 -ww %s: %v, stderr:\n%s", manPage, err, errb.String())
	}
	return out.String()
}

func TestManPageRenders(t *testing.T) {
	text := renderMan(t)
	for _, section := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO"} {
		if !strings.Contains(text, "\n"+section+"\n") {
			t.Errorf("%s has no %s section", manPage, section)
		}
	}
}

// TestManPageMentionsEveryFlag walks the CLI definition: every command and
// every flag of every command must be on the page.
func TestManPageMentionsEveryFlag(t *testing.T) {
	text := renderMan(t)
	var walk func(c *cli.Command)
	walk = func(c *cli.Command) {
		for _, f := range c.Flags {
			for _, n := range f.Names() {
				dash := "--"
				if len(n) == 1 {
					dash = "-"
				}
				if !strings.Contains(text, dash+n) {
					t.Errorf("%s does not mention %s%s (a flag of %s)", manPage, dash, n, c.Name)
				}
			}
		}
		for _, s := range c.Commands {
			if s.Hidden {
				continue
			}
			if !strings.Contains(text, c.Name+" "+s.Name) && !strings.Contains(text, "\n   "+s.Name+"\n") {
				t.Errorf("%s does not mention the command %s", manPage, s.Name)
			}
			walk(s)
		}
	}
	walk(newApp(nil, nil, nil))
}
