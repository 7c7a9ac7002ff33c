// Command interleave times commands side by side: each round runs every
// command once, in a shuffled order, so that slow drifts of the machine
// (other load, page cache, CPU frequency) hit all of them alike. It prints
// a Markdown table of medians and ratios to the baselines.
//
//	interleave -rounds 200 -warmup 10 -base 'bwrap' \
//	    -cmd 'agentbox=./agentbox -- true' -cmd 'bwrap=bwrap --dev-bind / / true'
//
// Commands are split on spaces and run directly (no shell), with stdin,
// stdout and stderr on /dev/null. A command that fails stops the run.
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ", ") }
func (m *multi) Set(s string) error { *m = append(*m, s); return nil }

type command struct {
	name  string
	argv  []string
	times []time.Duration
}

func main() {
	var cmds, bases multi
	rounds := flag.Int("rounds", 100, "rounds (each runs every command once)")
	warmup := flag.Int("warmup", 5, "untimed rounds first")
	flag.Var(&cmds, "cmd", "NAME=COMMAND ARGS (repeatable)")
	flag.Var(&bases, "base", "NAME of a baseline to give ratios against (repeatable)")
	title := flag.String("title", "", "a heading line")
	flag.Parse()
	var cs []*command
	for _, c := range cmds {
		name, line, ok := strings.Cut(c, "=")
		if !ok || strings.TrimSpace(line) == "" {
			fmt.Fprintf(os.Stderr, "interleave: -cmd %q: want NAME=COMMAND\n", c)
			os.Exit(2)
		}
		cs = append(cs, &command{name: name, argv: strings.Fields(line)})
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "interleave:", err)
		os.Exit(1)
	}
	for r := 0; r < *warmup+*rounds; r++ {
		order := rand.Perm(len(cs))
		for _, i := range order {
			c := cs[i]
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
			start := time.Now()
			err := cmd.Run()
			d := time.Since(start)
			if err != nil {
				fmt.Fprintf(os.Stderr, "interleave: %s: %v\n", c.name, err)
				os.Exit(1)
			}
			if r >= *warmup {
				c.times = append(c.times, d)
			}
		}
	}
	med := map[string]time.Duration{}
	for _, c := range cs {
		sort.Slice(c.times, func(i, j int) bool { return c.times[i] < c.times[j] })
		med[c.name] = c.times[len(c.times)/2]
	}
	if *title != "" {
		fmt.Printf("%s\n\n", *title)
	}
	head := "| command | median | p10 | p90 |"
	sep := "|---|---|---|---|"
	for _, b := range bases {
		head += " ÷ " + b + " |"
		sep += "---|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, c := range cs {
		n := len(c.times)
		row := fmt.Sprintf("| `%s` | %s | %s | %s |", strings.Join(c.argv, " "), ms(med[c.name]), ms(c.times[n/10]), ms(c.times[n*9/10]))
		for _, b := range bases {
			row += fmt.Sprintf(" %.2f× |", float64(med[c.name])/float64(med[b]))
		}
		fmt.Println(row)
	}
	fmt.Printf("\n(%d rounds after %d warm-up rounds, shuffled order each round)\n", *rounds, *warmup)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }
