package mounts

import "testing"

// benchConfig is a realistic session: the session's directories as
// /proc/self/fd magic links, /run/user present, and 13 hidden paths (the
// default credentials and host sockets of a home at /home/alice).
func benchConfig() Config {
	const root = "/run/user/1000/agentbox"
	const sess = root + "/0123456789ab"
	return Config{
		TmpSource: "/proc/self/fd/7", VarTmpSource: "/proc/self/fd/8", RunSource: "/proc/self/fd/9",
		RootHide: "/proc/self/fd/6",
		TmpName:  sess + "/tmp", VarTmpName: sess + "/var-tmp", RunName: sess + "/run", RootName: root,
		VarTmp:   true,
		RootPath: root,
		Hide: []string{
			"/home/alice/.ssh", "/home/alice/.gnupg", "/home/alice/.aws", "/home/alice/.azure",
			"/home/alice/.config/gcloud", "/home/alice/.kube", "/home/alice/.docker",
			"/home/alice/.netrc", "/home/alice/.git-credentials", "/home/alice/.password-store",
			"/run/docker.sock", "/var/run/docker.sock", "/run/podman",
		},
		ReadOnly: []string{"/home/alice/src/project/.git/hooks"},
		RunUser:  true,
		UID:      1000,
		DevShm:   true,
	}
}

func BenchmarkPlan(b *testing.B) {
	c := benchConfig()
	if len(c.Hide) != 13 {
		b.Fatalf("%d hidden paths, want 13", len(c.Hide))
	}
	b.ReportAllocs()
	for b.Loop() {
		ops, err := Plan(c)
		if err != nil {
			b.Fatal(err)
		}
		if len(ops) == 0 {
			b.Fatal("empty plan")
		}
	}
}
