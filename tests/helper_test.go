//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// helperEnv names the helper the test binary runs as instead of the tests
// when it is started as a command inside the sandbox (the re-exec pattern of
// go-landlock's lltest): ABTEST_HELPER=sigtrap.
const helperEnv = "ABTEST_HELPER"

// helperMain runs the helper named and returns its exit status.
func helperMain(name string) int {
	switch name {
	case "sigtrap":
		return sigtrap(os.Getenv("LOG"), os.Getenv("READY"))
	case "mkdeep":
		depth, err := strconv.Atoi(os.Getenv("DEPTH"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "mkdeep: DEPTH:", err)
			return 2
		}
		return mkdeep(os.Getenv("DIR"), depth)
	case "probeinit":
		return probeInit()
	case "fsops", "abstract-listen", "abstract-connect", "ttyguard", "nolandlock-exec":
		return policyHelper(name, os.Args[1:]) // policy_helpers_test.go
	case "seccomp-nouserns-exec", "seccomp-nomount-exec":
		return restrictedHelper(name, os.Args[1:]) // restricted_helpers_test.go
	case "nestprobe", "clientcancel", "clientorphan":
		return nestedHelper(name, os.Args[1:]) // nested_helpers_test.go
	}
	fmt.Fprintf(os.Stderr, "abtest-helper: unknown helper %q\n", name)
	return 2
}

// sigtrap catches HUP, INT, QUIT, USR1, USR2 and TERM, and appends one line
// per delivery to the file log ("INT"...), written with a single write(2) so
// that a reader never sees half a line; TERM ends it with status 42. It
// creates ready once the handlers are installed.
//
// Unlike a shell's trap, which runs only between commands, it takes each
// signal as soon as it is delivered, so two deliveries of one signal a
// moment apart are two lines, not one.
func sigtrap(log, ready string) int {
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGTERM)
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sigtrap:", err)
		return 2
	}
	if err := os.WriteFile(ready, nil, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "sigtrap:", err)
		return 2
	}
	for s := range sigs {
		sig := s.(syscall.Signal)
		if _, err := f.WriteString(strings.TrimPrefix(unix.SignalName(sig), "SIG") + "\n"); err != nil {
			fmt.Fprintln(os.Stderr, "sigtrap:", err)
			return 2
		}
		if sig == syscall.SIGTERM {
			return 42
		}
	}
	return 2
}

// mkdeep creates dir and a chain of depth directories named d below it, each
// made relative to the one above (the whole path is far longer than
// PATH_MAX, which a shell's mkdir -p cannot do), and makes the deepest one
// mode 000.
func mkdeep(dir string, depth int) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "mkdeep:", err)
		return 2
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fail(err)
	}
	if err := os.Chdir(dir); err != nil {
		return fail(err)
	}
	for i := 0; i < depth; i++ {
		if err := syscall.Mkdir("d", 0o700); err != nil {
			return fail(fmt.Errorf("level %d: %w", i, err))
		}
		if err := syscall.Chdir("d"); err != nil {
			return fail(fmt.Errorf("level %d: %w", i, err))
		}
	}
	if err := syscall.Chmod(".", 0); err != nil {
		return fail(err)
	}
	return 0
}

// probeInit reports what the command can do to PID 1, the sandbox's init,
// which holds descriptors of the session root: list its descriptors through
// /proc, and attach to it with ptrace. It prints "fd: denied" or
// "fd: readable", and "ptrace: denied" or "ptrace: attached" (after which it
// detaches at once, so that init keeps reaping).
func probeInit() int {
	if _, err := os.ReadDir("/proc/1/fd"); err != nil {
		fmt.Println("fd: denied")
	} else {
		fmt.Println("fd: readable")
	}
	// ptrace requests must come from the thread that attached.
	runtime.LockOSThread()
	if err := unix.PtraceAttach(1); err != nil {
		fmt.Println("ptrace: denied")
		return 0
	}
	var ws unix.WaitStatus
	unix.Wait4(1, &ws, unix.WALL, nil)
	unix.PtraceDetach(1)
	fmt.Println("ptrace: attached")
	return 0
}
