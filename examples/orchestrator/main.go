//go:build linux

// Command orchestrator runs eight sub-agents at once, each in its own
// agentbox session, through the Go API (package client), and checks that
// none of them sees another's /tmp.
//
//	go build -o orchestrator ./examples/orchestrator
//	./orchestrator [-agentbox path/to/agentbox] [-n 8]
//
// Every sub-agent writes its session id to the same fixed name,
// /tmp/agent-owner (the kind of name agent runtimes use), waits until all
// of them have written it, lists /tmp and reads the name back. Isolated,
// each reads its own id and sees only its own file. The orchestrator
// prints one line per sub-agent, then "ok", and exits 0 when they were
// isolated; it exits 1 and says what leaked otherwise.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentbox/agentbox/client"
)

// subAgent is what each sub-agent runs: it stands in for an agent CLI.
// $1 is a directory shared by the orchestrator's sub-agents (the project),
// where each says it has written, so that all of them hold their file in
// /tmp at the same time before any reads it back.
const subAgent = `
set -eu
echo "$AGENTBOX_SESSION" > /tmp/agent-owner
touch "$1/written-$AGENTBOX_SESSION"
n=0
while [ "$(ls "$1" | grep -c '^written-')" -lt "$2" ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done
echo "owner=$(cat /tmp/agent-owner)"
echo "tmp=$(ls -A /tmp | tr '\n' ' ')"
`

func main() {
	bin := flag.String("agentbox", "agentbox", "the agentbox binary")
	n := flag.Int("n", 8, "sub-agents to run at once")
	flag.Parse()
	if err := run(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "orchestrator:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(bin string, n int) error {
	if strings.ContainsRune(bin, '/') {
		bin, _ = filepath.Abs(bin)
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	// The sub-agents' shared project: the default profile lets each write
	// its working directory.
	project, err := os.MkdirTemp(wd, ".orchestrator-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(project)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type outcome struct {
		id     string
		res    client.Result
		stdout string
		err    error
	}
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var stdout, stderr bytes.Buffer
			sb, err := client.Start(ctx, client.Config{
				Binary: bin,
				Argv:   []string{"sh", "-c", subAgent, "sub-agent", project, fmt.Sprint(n)},
				Dir:    project,
				Stdout: &stdout,
				Stderr: &stderr,
			})
			if err != nil {
				out[i].err = err
				return
			}
			out[i].id = sb.ID()
			out[i].res, out[i].err = sb.Wait()
			out[i].stdout = stdout.String()
			if out[i].err == nil && out[i].res.ExitStatus != 0 {
				out[i].err = fmt.Errorf("exit status %d: %s", out[i].res.ExitStatus, stderr.String())
			}
		}()
	}
	wg.Wait()

	var problems []string
	seen := map[string]bool{}
	for i, o := range out {
		if o.err != nil {
			problems = append(problems, fmt.Sprintf("sub-agent %d: %v", i, o.err))
			continue
		}
		owner, tmp := field(o.stdout, "owner"), field(o.stdout, "tmp")
		fmt.Printf("sub-agent %d: session %s, /tmp/agent-owner says %s, /tmp holds [%s], cleanup %s\n",
			i, o.id, owner, strings.TrimSpace(tmp), o.res.Cleanup)
		switch {
		case seen[o.id]:
			problems = append(problems, fmt.Sprintf("sub-agent %d: session %s shared", i, o.id))
		case owner != o.id:
			problems = append(problems, fmt.Sprintf("sub-agent %d (session %s) read another's /tmp/agent-owner: %s", i, o.id, owner))
		case strings.TrimSpace(tmp) != "agent-owner":
			problems = append(problems, fmt.Sprintf("sub-agent %d (session %s) sees more than its own /tmp: %s", i, o.id, tmp))
		case o.res.Cleanup != "removed":
			problems = append(problems, fmt.Sprintf("sub-agent %d (session %s): cleanup %q %s", i, o.id, o.res.Cleanup, o.res.CleanupError))
		}
		seen[o.id] = true
	}
	if _, err := os.Lstat("/tmp/agent-owner"); err == nil {
		problems = append(problems, "/tmp/agent-owner reached the host's /tmp")
	}
	if len(problems) > 0 {
		return fmt.Errorf("sub-agents were not isolated:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// field returns the value of the line "name=value" in s.
func field(s, name string) string {
	for _, l := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v
		}
	}
	return ""
}
