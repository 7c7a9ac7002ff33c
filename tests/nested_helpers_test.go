//go:build linux

package tests

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agentbox/agentbox/client"
)

// nestedHelper runs the helpers of the nesting tests.
func nestedHelper(name string, args []string) int {
	switch name {
	case "nestprobe":
		return nestProbe(args[0], args[1])
	case "clientcancel":
		return clientCancel(args[0])
	case "clientorphan":
		return clientOrphan(args[0], args[1])
	}
	return 2
}

// nestProbe connects to the nest socket sock as an outsider would and asks
// it to run a command that creates marker; it prints how many bytes came
// back before the socket closed.
func nestProbe(sock, marker string) int {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		fmt.Println("socket:", err)
		return 1
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: sock}); err != nil {
		fmt.Println("connect:", err)
		return 0
	}
	req := map[string]any{"argv": [][]byte{[]byte("sh"), []byte("-c"), []byte("echo reached > " + marker)}, "env": [][]byte{[]byte("PATH=/usr/bin:/bin")}, "dir": []byte("/")}
	body, _ := json.Marshal(req)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if err := unix.Sendmsg(fd, msg[:1], unix.UnixRights(0, 1, 2), nil, 0); err != nil {
		fmt.Println("sendmsg:", err)
		return 0
	}
	unix.Write(fd, append(msg[1:], body...))
	unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 5})
	b, _ := io.ReadAll(os.NewFile(uintptr(fd), "nest"))
	fmt.Printf("reply=%d\n", len(b))
	return 0
}

// clientCancel starts a command that ignores SIGTERM through the Go API,
// cancels it, and prints how Wait ended and how long it took.
func clientCancel(bin string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := startReady(ctx, client.Config{Binary: bin, Argv: []string{"sh", "-c", `trap '' TERM; echo ready; while :; do sleep 0.05; done`}, Grace: 300 * time.Millisecond})
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	begin := time.Now()
	cancel()
	select {
	case <-sb.Done():
	case <-time.After(10 * time.Second):
		fmt.Println("not ended 10s after cancel")
		return 1
	}
	res, err := sb.Wait()
	fmt.Printf("canceled=%v status=%d err=%v within=%v\n", res.Canceled, res.ExitStatus, err, time.Since(begin) < 8*time.Second)
	return 0
}

// clientOrphan starts a command that ignores SIGTERM and writes its pid to
// pidfile, then exits without waiting: the sandbox must die with it.
func clientOrphan(bin, pidfile string) int {
	if _, err := startReady(context.Background(), client.Config{Binary: bin, Argv: []string{"sh", "-c", `trap '' TERM; echo $$ > "$1"; echo ready; exec sleep 300`, "sh", pidfile}}); err != nil {
		fmt.Println("start:", err)
		return 1
	}
	fmt.Println("orphaning")
	return 0
}

// startReady starts cfg, whose command prints "ready" first, and returns
// once that line has come and the sandbox has reported the command started.
func startReady(ctx context.Context, cfg client.Config) (*client.Sandbox, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cfg.Stdout = w
	sb, err := client.Start(ctx, cfg)
	w.Close()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(r, buf); err != nil || string(buf) != "ready\n" {
		return nil, fmt.Errorf("read %q, %v; want ready", buf, err)
	}
	<-sb.Started() // the command's output may come before the event
	return sb, nil
}
