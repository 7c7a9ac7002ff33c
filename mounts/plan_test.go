package mounts

import (
	"strings"
	"testing"
)

func base() Config {
	return Config{TmpSource: "/proc/self/fd/8", VarTmpSource: "/proc/self/fd/9", RunSource: "/proc/self/fd/10",
		RootHide: "/proc/self/fd/7", RunUser: true, UID: 1000, DevShm: true, VarTmp: true,
		RootPath: "/home/u/.local/state/agentbox", Hide: []string{"/home/u/.ssh", "/run/docker.sock"}, ReadOnly: []string{"/home/u/p/.git/hooks"}}
}

func render(ops []Op) string {
	var s []string
	for _, o := range ops {
		s = append(s, o.String())
	}
	return strings.Join(s, "\n")
}

func TestPlanOrder(t *testing.T) {
	ops, err := Plan(base())
	if err != nil {
		t.Fatalf("Plan(base) = %v", err)
	}
	want := `slave /
tmpfs /proc/self/fd/7 (mode=0700,size=16k,nr_inodes=8)
stage /home/u/.local/state/agentbox
stage-proc /home/u/.local/state/agentbox
bind /proc/self/fd/8 → /tmp
bind /proc/self/fd/9 → /var/tmp
tmpfs /run/user (mode=0755,size=16k,nr_inodes=16)
mkdir /run/user/1000
bind /proc/self/fd/10 → /run/user/1000
readonly /run/user
hide /home/u/.ssh
hide /run/docker.sock
bind-ro /home/u/p/.git/hooks
seal /home/u/.local/state/agentbox
tmpfs /dev/shm (mode=1777)
proc /proc
bind-ro /proc/sys
bind-ro /proc/sysrq-trigger
bind-ro /proc/irq
bind-ro /proc/bus
bind-ro /proc/fs`
	if got := render(ops); got != want {
		t.Errorf("Plan(base) =\n%s\nwant\n%s", got, want)
	}
	for _, o := range ops {
		if o.Kind == Bind && o.Flags&(NoSuid|NoDev) != NoSuid|NoDev {
			t.Errorf("bind %s lacks nosuid,nodev", o.Target)
		}
		if o.Kind == Seal && o.Target != "/home/u/.local/state/agentbox" {
			t.Errorf("seal targets %s, want the session root", o.Target)
		}
	}
}

func TestPlanNoRunUser(t *testing.T) {
	c := base()
	c.RunUser, c.DevShm, c.VarTmp = false, false, false
	ops, err := Plan(c)
	if err != nil {
		t.Fatalf("Plan = %v", err)
	}
	got := render(ops)
	if strings.Contains(got, "/run/user") || strings.Contains(got, "/dev/shm") || strings.Contains(got, "/var/tmp") {
		t.Errorf("Plan(no /run/user, no /dev/shm) =\n%s\nmentions them", got)
	}
	if c.RuntimeDir() != "/tmp/.agentbox-run-1000" || !strings.Contains(got, "bind /proc/self/fd/10 → /tmp/.agentbox-run-1000") {
		t.Errorf("runtime dir %s not bound in\n%s", c.RuntimeDir(), got)
	}
	// The runtime dir lives in /tmp: it must be created after /tmp is bound.
	if strings.Index(got, "mkdir /tmp/.agentbox-run-1000") < strings.Index(got, "bind /proc/self/fd/8 → /tmp") {
		t.Errorf("runtime dir made before /tmp is bound:\n%s", got)
	}
}

func TestPlanRejects(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"relative tmp": func(c *Config) { c.TmpSource = "tmp" },
		"unclean run":  func(c *Config) { c.RunSource = "/proc/self/fd/10/../x" },
		"empty root":   func(c *Config) { c.RootHide = "" },
		"root is /":    func(c *Config) { c.RootHide = "/" },
		"negative uid": func(c *Config) { c.UID = -1 },
		"empty vartmp": func(c *Config) { c.VarTmpSource = "" },
	} {
		c := base()
		mod(&c)
		if ops, err := Plan(c); err == nil {
			t.Errorf("%s: Plan(%+v) = %v, nil; want error", name, c, render(ops))
		}
	}
}

func FuzzPlan(f *testing.F) {
	f.Add("/proc/self/fd/8", "/proc/self/fd/9", "/proc/self/fd/10", "/proc/self/fd/7", true, 1000, "/home/u/.ssh")
	f.Fuzz(func(t *testing.T, tmp, vartmp, run, root string, runUser bool, uid int, hide string) {
		c := Config{TmpSource: tmp, VarTmpSource: vartmp, RunSource: run, RootHide: root, RunUser: runUser, UID: uid, DevShm: true, VarTmp: true,
			RootPath: "/r", Hide: []string{hide}}
		ops, err := Plan(c)
		if err != nil {
			return
		}
		if ops[0].Kind != Slave || ops[len(ops)-1].Target != "/proc/fs" {
			t.Fatalf("Plan(%+v) does not start with slave and end with /proc made read-only:\n%s", c, render(ops))
		}
		for _, o := range ops {
			if o.Kind == Hide && (o.Target == "/" || strings.HasPrefix(o.Target, "/tmp/") || strings.HasPrefix(o.Target, "/proc/")) {
				t.Fatalf("Plan(%+v) hides %s", c, o.Target)
			}
			if o.Target == "/" && o.Kind != Slave {
				t.Fatalf("Plan(%+v) mounts over /:\n%s", c, render(ops))
			}
		}
	})
}

// TestPlanStageProcAfterReadOnlyTree checks that the spare proc is mounted
// after the tree is made read-only: a read-only spare would force a nested
// sandbox's /proc to be read-only too (the kernel locks the flag).
func TestPlanStageProcAfterReadOnlyTree(t *testing.T) {
	c := base()
	c.ReadOnlyRoot = true
	c.Writable = []string{"/home/u/p"}
	ops, err := Plan(c)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(k Kind) int {
		for i, o := range ops {
			if o.Kind == k {
				return i
			}
		}
		return -1
	}
	if s, r, w, seal := idx(StageProc), idx(ReadOnlyTree), idx(BindRW), idx(Seal); s < 0 || r < 0 || w < 0 || s < r || s < w || s > seal {
		t.Errorf("stage-proc at %d, readonly-tree at %d, bind-rw at %d, seal at %d: want stage-proc after the read-only tree and before the seal", s, r, w, seal)
	}
}
