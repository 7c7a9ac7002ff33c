//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Request numbers the tests use, spelled out rather than taken from the
// package under test (include/uapi/asm-generic/ioctls.h; the same on amd64
// and arm64).
const (
	reqTCGETS     = 0x5401
	reqTCSETS     = 0x5402
	reqTCSETSW    = 0x5403
	reqTCSETSF    = 0x5404
	reqTIOCGPGRP  = 0x540f
	reqTIOCSPGRP  = 0x5410
	reqTIOCSTI    = 0x5412
	reqTIOCGWINSZ = 0x5413
	reqTIOCSWINSZ = 0x5414
	reqTIOCLINUX  = 0x541c

	x32Bit = 0x40000000
)

// seccompData is struct seccomp_data (include/uapi/linux/seccomp.h).
type seccompData struct {
	nr   uint32 // int in the kernel; the filter sees its bits
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], d.nr)
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

func (d seccompData) String() string {
	return fmt.Sprintf("{nr %#x, arch %#x, args[1] %#x}", d.nr, d.arch, d.args[1])
}

// emulate runs prog over d as the kernel's classic BPF interpreter would,
// for the instructions this package emits, with the checks
// seccomp_check_filter makes on loads.
func emulate(prog []unix.SockFilter, d seccompData) (uint32, error) {
	data := d.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K+4 > uint32(len(data)) {
				return 0, fmt.Errorf("pc %d: load at offset %d outside seccomp_data or unaligned", pc, in.K)
			}
			a = binary.LittleEndian.Uint32(data[in.K:])
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			a &= in.K
		case unix.BPF_JMP | unix.BPF_JA:
			pc += int(in.K)
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			if a == in.K {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		case unix.BPF_RET | unix.BPF_K:
			return in.K, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x not emulated", pc, in.Code)
		}
	}
	return 0, errors.New("ran past the last instruction")
}

// abi is one system-call ABI a kernel of this build reports, with the numbers
// that run ioctl under it, written independently of the package's tables.
type abi struct {
	name   string
	arch   uint32
	mask   uint32 // ANDed with nr before looking it up in ioctls
	ioctls []uint32
}

func abis() []abi {
	switch runtime.GOARCH {
	case "amd64":
		return []abi{
			{"x86-64 and x32", 0xc000003e, ^uint32(x32Bit), []uint32{16, 514}},
			{"i386", 0x40000003, ^uint32(0), []uint32{54}},
		}
	case "arm64":
		return []abi{
			{"aarch64", 0xc00000b7, ^uint32(0), []uint32{29}},
			{"aarch32", 0x40000028, ^uint32(0), []uint32{54}},
		}
	}
	panic("no ABI table for " + runtime.GOARCH)
}

const (
	wantAllow = unix.SECCOMP_RET_ALLOW
	wantEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	wantKill  = unix.SECCOMP_RET_KILL_PROCESS
)

// model is what the filter must answer, as documented in doc.go.
func model(d seccompData) uint32 {
	for _, a := range abis() {
		if d.arch != a.arch {
			continue
		}
		req := uint32(d.args[1]) // the kernel's ioctl takes an unsigned int
		if slices.Contains(a.ioctls, d.nr&a.mask) && (req == reqTIOCSTI || req == reqTIOCLINUX) {
			return wantEPERM
		}
		return wantAllow
	}
	return wantKill
}

func actionName(r uint32) string {
	switch r {
	case wantAllow:
		return "ALLOW"
	case wantEPERM:
		return "ERRNO(EPERM)"
	case wantKill:
		return "KILL_PROCESS"
	}
	return fmt.Sprintf("%#x", r)
}

func TestFilterStructure(t *testing.T) {
	prog := Filter()
	if n := len(prog); n == 0 || n > unix.BPF_MAXINSNS {
		t.Fatalf("len(Filter()) = %d, want 1..%d", n, unix.BPF_MAXINSNS)
	}
	if last := prog[len(prog)-1]; last.Code != unix.BPF_RET|unix.BPF_K || last.K != wantAllow {
		t.Errorf("last instruction = %+v, want RET ALLOW", last)
	}
	reached := make([]bool, len(prog))
	reached[0] = true
	for pc, in := range prog {
		if !reached[pc] {
			t.Errorf("instruction %d %+v is unreachable", pc, in)
		}
		var targets []int
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			if in.K%4 != 0 || in.K > 60 {
				t.Errorf("instruction %d loads offset %d, want a multiple of 4 below 64", pc, in.K)
			}
			targets = []int{pc + 1}
		case unix.BPF_ALU | unix.BPF_AND | unix.BPF_K:
			targets = []int{pc + 1}
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			targets = []int{pc + 1 + int(in.Jt), pc + 1 + int(in.Jf)}
		case unix.BPF_RET | unix.BPF_K:
			if r := in.K; r != wantAllow && r != wantEPERM && r != wantKill {
				t.Errorf("instruction %d returns %#x, want ALLOW, ERRNO(EPERM) or KILL_PROCESS", pc, r)
			}
		default:
			t.Errorf("instruction %d has opcode %#x, want one of LD|W|ABS, ALU|AND|K, JMP|JEQ|K, RET|K", pc, in.Code)
		}
		for _, to := range targets {
			if to >= len(prog) {
				t.Errorf("instruction %d %+v jumps to %d, past the end (%d instructions)", pc, in, to, len(prog))
				continue
			}
			reached[to] = true
		}
	}

	// Each call hands out its own copy.
	prog[0].K ^= 1
	if again := Filter(); again[0].K == prog[0].K {
		t.Errorf("Filter() returned a slice shared with an earlier call")
	}
}

// TestABITables checks the package's numbers against the tests' own.
func TestABITables(t *testing.T) {
	as := abis()
	var native []uint32
	for _, n := range nativeIoctls {
		native = append(native, n&nrMask)
	}
	if nativeArch != as[0].arch || !slices.Equal(native, as[0].ioctls) || nrMask != as[0].mask {
		t.Errorf("native ABI = arch %#x ioctls %v mask %#x, want %#x %v %#x", nativeArch, native, nrMask, as[0].arch, as[0].ioctls, as[0].mask)
	}
	if compatArch != as[1].arch || !slices.Equal([]uint32{compatIoctl}, as[1].ioctls) {
		t.Errorf("compat ABI = arch %#x ioctl %d, want %#x %v", compatArch, compatIoctl, as[1].arch, as[1].ioctls)
	}
	if unix.TIOCSTI != reqTIOCSTI || unix.TIOCLINUX != reqTIOCLINUX {
		t.Errorf("TIOCSTI, TIOCLINUX = %#x, %#x, want %#x, %#x", unix.TIOCSTI, unix.TIOCLINUX, reqTIOCSTI, reqTIOCLINUX)
	}
}

type decisionCase struct {
	name string
	d    seccompData
	want uint32
}

func call(arch, nr uint32, req uint64) seccompData {
	return seccompData{nr: nr, arch: arch, ip: 0x401000, args: [6]uint64{1, req, 0xc000012345}}
}

func decisionCases() []decisionCase {
	as := abis()
	native, compat := as[0], as[1]
	ioctl := native.ioctls[0]
	cs := []decisionCase{
		{"ioctl TIOCSTI", call(native.arch, ioctl, reqTIOCSTI), wantEPERM},
		{"ioctl TIOCSTI, all high bits set", call(native.arch, ioctl, 0xffffffff_00000000|reqTIOCSTI), wantEPERM},
		{"ioctl TIOCSTI, bit 32 set", call(native.arch, ioctl, 1<<32|reqTIOCSTI), wantEPERM},
		{"ioctl TIOCLINUX", call(native.arch, ioctl, reqTIOCLINUX), wantEPERM},
		{"ioctl TIOCLINUX, high bits set", call(native.arch, ioctl, 0xdeadbeef_00000000|reqTIOCLINUX), wantEPERM},
		{"ioctl TIOCSTI in the high word only", call(native.arch, ioctl, reqTIOCSTI<<32), wantAllow},
		{"ioctl TIOCSTI+1", call(native.arch, ioctl, reqTIOCSTI+1), wantAllow},
		{"ioctl TIOCSWINSZ", call(native.arch, ioctl, reqTIOCSWINSZ), wantAllow},
		{"ioctl TIOCGWINSZ", call(native.arch, ioctl, reqTIOCGWINSZ), wantAllow},
		{"ioctl TIOCSPGRP", call(native.arch, ioctl, reqTIOCSPGRP), wantAllow},
		{"ioctl TIOCGPGRP", call(native.arch, ioctl, reqTIOCGPGRP), wantAllow},
		{"ioctl TCGETS", call(native.arch, ioctl, reqTCGETS), wantAllow},
		{"ioctl TCSETS", call(native.arch, ioctl, reqTCSETS), wantAllow},
		{"ioctl TCSETSW", call(native.arch, ioctl, reqTCSETSW), wantAllow},
		{"ioctl TCSETSF", call(native.arch, ioctl, reqTCSETSF), wantAllow},
		{"read with TIOCSTI as its second argument", call(native.arch, 0, reqTIOCSTI), wantAllow},
		{"write with TIOCLINUX as its second argument", call(native.arch, 1, reqTIOCLINUX), wantAllow},
		{"foreign ABI ioctl TIOCSTI", call(compat.arch, compat.ioctls[0], reqTIOCSTI), wantEPERM},
		{"foreign ABI ioctl TIOCSTI, high bits set", call(compat.arch, compat.ioctls[0], 0xffffffff_00000000|reqTIOCSTI), wantEPERM},
		{"foreign ABI ioctl TIOCLINUX", call(compat.arch, compat.ioctls[0], reqTIOCLINUX), wantEPERM},
		{"foreign ABI ioctl TIOCSWINSZ", call(compat.arch, compat.ioctls[0], reqTIOCSWINSZ), wantAllow},
		{"foreign ABI call numbered like the native ioctl", call(compat.arch, ioctl, reqTIOCSTI), wantAllow},
		{"unknown arch", call(0, ioctl, reqTIOCSWINSZ), wantKill},
		{"unknown arch, native arch with the low bit flipped", call(native.arch^1, 3, 0), wantKill},
	}
	switch runtime.GOARCH {
	case "amd64":
		cs = append(cs,
			decisionCase{"x32 ioctl TIOCSTI", call(native.arch, x32Bit|514, reqTIOCSTI), wantEPERM},
			decisionCase{"x32 ioctl TIOCLINUX, high bits set", call(native.arch, x32Bit|514, 0x1_00000000|reqTIOCLINUX), wantEPERM},
			decisionCase{"x32 bit with the x86-64 ioctl number", call(native.arch, x32Bit|16, reqTIOCSTI), wantEPERM},
			decisionCase{"x32 ioctl number without the x32 bit", call(native.arch, 514, reqTIOCSTI), wantEPERM},
			decisionCase{"x32 ioctl TIOCSWINSZ", call(native.arch, x32Bit|514, reqTIOCSWINSZ), wantAllow},
			decisionCase{"x32 read", call(native.arch, x32Bit|0, reqTIOCSTI), wantAllow},
			decisionCase{"aarch64 on amd64", call(0xc00000b7, 29, reqTIOCSTI), wantKill},
		)
	case "arm64":
		cs = append(cs,
			decisionCase{"bit 30 set on aarch64 (no x32 here)", call(native.arch, x32Bit|29, reqTIOCSTI), wantAllow},
			decisionCase{"x86-64 on arm64", call(0xc000003e, 16, reqTIOCSTI), wantKill},
		)
	}
	return cs
}

func TestFilterDecisions(t *testing.T) {
	prog := Filter()
	for _, c := range decisionCases() {
		got, err := emulate(prog, c.d)
		if err != nil {
			t.Errorf("%s: emulate(Filter(), %v) failed: %v", c.name, c.d, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: emulate(Filter(), %v) = %s, want %s", c.name, c.d, actionName(got), actionName(c.want))
		}
		if m := model(c.d); m != c.want {
			t.Errorf("%s: model(%v) = %s, want %s (the test's model disagrees with its table)", c.name, c.d, actionName(m), actionName(c.want))
		}
	}
}

// FuzzFilter runs the program over arbitrary seccomp_data. The selectors
// steer the fuzzer to the ABIs, ioctl numbers and requests that matter,
// while raw values still reach every other input.
func FuzzFilter(f *testing.F) {
	for _, c := range decisionCases() {
		f.Add(uint8(3), c.d.arch, uint8(3), c.d.nr, uint8(3), c.d.args[1], c.d.args[0], c.d.args[2], c.d.ip)
	}
	f.Add(uint8(0), uint32(0), uint8(0), uint32(0), uint8(0), uint64(0xffff0000_00000000), uint64(0), uint64(0), uint64(0))
	f.Add(uint8(1), uint32(0), uint8(1), uint32(1), uint8(1), uint64(0), uint64(0), uint64(0), uint64(0))
	prog := Filter()
	as := abis()
	f.Fuzz(func(t *testing.T, archSel uint8, arch uint32, nrSel uint8, nr uint32, reqSel uint8, req, arg0, arg2, ip uint64) {
		if i := int(archSel % 4); i < len(as) {
			arch = as[i].arch
		}
		switch nrSel % 4 {
		case 0, 1:
			a := as[int(nrSel/4)%len(as)]
			nr = a.ioctls[nr%uint32(len(a.ioctls))] | nr&^a.mask
		}
		switch reqSel % 4 {
		case 0:
			req = req&^0xffffffff | reqTIOCSTI
		case 1:
			req = req&^0xffffffff | reqTIOCLINUX
		}
		d := seccompData{nr: nr, arch: arch, ip: ip, args: [6]uint64{arg0, req, arg2, arg0 ^ req, ip, ^arg2}}
		got, err := emulate(prog, d)
		if err != nil {
			t.Fatalf("emulate(Filter(), %v) failed: %v", d, err)
		}
		if want := model(d); got != want {
			t.Fatalf("emulate(Filter(), %v) = %s, want %s", d, actionName(got), actionName(want))
		}
	})
}

// The real test. The filter is irreversible, so it is installed only in a
// child process: the test binary run again with helperEnv set.

const (
	helperEnv    = "AGENTBOX_SECCOMP_TEST_HELPER"
	helperDone   = "ttyguard helper: every check ran"
	helperFD     = 3 // the pty slave in the grandchild (ExtraFiles[0])
	legacyPath   = "/proc/sys/dev/tty/legacy_tiocsti"
	capSysAdmin  = 21
	pollDeadline = 5 * time.Second
)

// runHelper runs this test binary's TestHelperTTYGuard in mode and fails t
// unless it passed and reached its end.
func runHelper(t *testing.T, mode string, files []*os.File, attr *syscall.SysProcAttr) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("os.Executable() = %v", err)
	}
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperTTYGuard$", "-test.v", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.ExtraFiles = files
	cmd.SysProcAttr = attr
	out, err := cmd.CombinedOutput()
	t.Logf("%s output:\n%s", mode, out)
	if err != nil {
		t.Fatalf("%s helper: %v", mode, err)
	}
	if !bytes.Contains(out, []byte(helperDone)) {
		t.Fatalf("%s helper exited 0 without running its checks", mode)
	}
}

// legacyTIOCSTI reports whether the kernel lets a task without
// CAP_SYS_ADMIN use TIOCSTI on its controlling terminal.
func legacyTIOCSTI(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(legacyPath)
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("%s: absent (a kernel before 6.2: TIOCSTI is always allowed on the controlling terminal)", legacyPath)
		return true
	}
	if err != nil {
		t.Fatalf("read %s: %v", legacyPath, err)
	}
	v := strings.TrimSpace(string(b))
	t.Logf("%s = %s", legacyPath, v)
	return v != "0"
}

// statusField returns a field of /proc/self/status or /proc/thread-self/status.
func statusField(t *testing.T, path, name string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("%s has no %s field", path, name)
	return ""
}

func hasCapSysAdmin(t *testing.T) bool {
	t.Helper()
	eff, err := strconv.ParseUint(statusField(t, "/proc/self/status", "CapEff"), 16, 64)
	if err != nil {
		t.Fatalf("parse CapEff: %v", err)
	}
	return eff&(1<<capSysAdmin) != 0
}

// tiocsti queues c on the input of the terminal fd through ioctl request
// req (TIOCSTI, perhaps with high bits set).
func tiocsti(fd int, req uint64, c byte) error {
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(unsafe.Pointer(&c))); e != 0 {
		return e
	}
	return nil
}

// tioclinux asks for TIOCL_PASTESEL (3): paste the console selection as input.
func tioclinux(fd int) error {
	sub := byte(3)
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), reqTIOCLINUX, uintptr(unsafe.Pointer(&sub))); e != 0 {
		return e
	}
	return nil
}

// readable waits up to d for input on fd.
func readable(t *testing.T, fd int, d time.Duration) bool {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(d.Milliseconds()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		return n > 0
	}
}

// openPTY opens a pty pair without going through a path for the slave.
func openPTY(t *testing.T) (master, slave int) {
	t.Helper()
	master, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { unix.Close(master) })
	if err := unix.IoctlSetPointerInt(master, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("ioctl(TIOCSPTLCK, 0) on /dev/ptmx: %v", err)
	}
	fd, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(master), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if e != 0 {
		t.Fatalf("ioctl(TIOCGPTPEER) on /dev/ptmx: %v (needs Linux 4.13)", e)
	}
	slave = int(fd)
	t.Cleanup(func() { unix.Close(slave) })
	return master, slave
}

func TestInstallTTYGuard(t *testing.T) {
	legacyTIOCSTI(t)
	before := statusField(t, "/proc/self/status", "Seccomp_filters")
	// setsid: the child starts a session of its own, with no controlling
	// terminal, so it can take the pty as one and never sees ours.
	runHelper(t, "child", nil, &syscall.SysProcAttr{Setsid: true})
	if after := statusField(t, "/proc/self/status", "Seccomp_filters"); after != before {
		t.Errorf("the test process's Seccomp_filters = %s after the test, want %s: the filter leaked into it", after, before)
	}
}

// TestHelperTTYGuard is not a test of its own: TestInstallTTYGuard runs it,
// in a child process, with helperEnv set.
func TestHelperTTYGuard(t *testing.T) {
	switch mode := os.Getenv(helperEnv); mode {
	case "":
		return
	case "child":
		ttyGuardChild(t)
	case "grandchild":
		ttyGuardGrandchild(t)
	default:
		t.Fatalf("%s = %q, want child or grandchild", helperEnv, mode)
	}
}

func ttyGuardChild(t *testing.T) {
	// Never unlocked: this thread gets the filter and must exit with the
	// goroutine rather than go back to the scheduler.
	runtime.LockOSThread()
	// This process is the session leader with the pty as its controlling
	// terminal: closing the master at cleanup hangs the terminal up and
	// sends it SIGHUP.
	signal.Ignore(unix.SIGHUP)
	master, slave := openPTY(t)
	if err := unix.IoctlSetInt(slave, unix.TIOCSCTTY, 0); err != nil {
		t.Fatalf("ioctl(TIOCSCTTY) on the pty slave: %v (the parent should have started this helper with setsid)", err)
	}

	// Control: without the filter, TIOCSTI works here, and the byte arrives.
	legacy, admin := legacyTIOCSTI(t), hasCapSysAdmin(t)
	t.Logf("CAP_SYS_ADMIN effective: %v", admin)
	err := tiocsti(slave, reqTIOCSTI, 'x')
	if legacy || admin {
		if err != nil {
			t.Fatalf("before the filter: ioctl(TIOCSTI) on the controlling pty = %v, want success", err)
		}
		if err := tiocsti(slave, reqTIOCSTI, '\n'); err != nil {
			t.Fatalf("before the filter: ioctl(TIOCSTI, '\\n') = %v, want success", err)
		}
		if !readable(t, slave, pollDeadline) {
			t.Fatalf("before the filter: the byte TIOCSTI queued never arrived")
		}
		buf := make([]byte, 16)
		n, err := unix.Read(slave, buf)
		if err != nil || string(buf[:n]) != "x\n" {
			t.Fatalf("before the filter: read(pty slave) = %q, %v, want \"x\\n\"", buf[:max(n, 0)], err)
		}
	} else {
		// legacy_tiocsti=0 without CAP_SYS_ADMIN: the kernel refuses with
		// EIO, which the filter's EPERM below is still told apart from.
		if !errors.Is(err, unix.EIO) {
			t.Fatalf("before the filter, legacy_tiocsti=0: ioctl(TIOCSTI) = %v, want EIO", err)
		}
		t.Logf("the kernel refuses TIOCSTI here (EIO); checking that the filter answers EPERM first")
	}
	if err := tioclinux(slave); errors.Is(err, unix.EPERM) {
		t.Fatalf("before the filter: ioctl(TIOCLINUX) on a pty = EPERM, so EPERM after it would prove nothing")
	} else {
		t.Logf("before the filter: ioctl(TIOCLINUX) on a pty = %v", err)
	}

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		t.Fatalf("prctl(PR_SET_NO_NEW_PRIVS): %v", err)
	}
	if err := InstallTTYGuard(); err != nil {
		t.Fatalf("InstallTTYGuard() = %v", err)
	}
	if got := statusField(t, "/proc/thread-self/status", "Seccomp"); got != "2" {
		t.Fatalf("Seccomp of the locked thread = %s after InstallTTYGuard, want 2 (filter)", got)
	}

	denied := []struct {
		name string
		do   func() error
	}{
		{"ioctl(TIOCSTI)", func() error { return tiocsti(slave, reqTIOCSTI, 'y') }},
		{"ioctl(TIOCSTI|0xdeadbeef<<32)", func() error { return tiocsti(slave, 0xdeadbeef_00000000|reqTIOCSTI, 'y') }},
		{"ioctl(TIOCSTI|1<<32)", func() error { return tiocsti(slave, 1<<32|reqTIOCSTI, 'y') }},
		{"ioctl(TIOCSTI) on the master", func() error { return tiocsti(master, reqTIOCSTI, 'y') }},
		{"ioctl(TIOCLINUX, TIOCL_PASTESEL)", func() error { return tioclinux(slave) }},
	}
	for _, c := range denied {
		if err := c.do(); !errors.Is(err, unix.EPERM) {
			t.Errorf("with the filter: %s = %v, want EPERM", c.name, err)
		}
	}

	// Raw mode, through each of the three setters; the first, TCSETS, does
	// not flush input, so the check after it would see any queued byte.
	cooked, err := unix.IoctlGetTermios(slave, unix.TCGETS)
	if err != nil {
		t.Fatalf("with the filter: ioctl(TCGETS) = %v", err)
	}
	raw := *cooked
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	for _, set := range []struct {
		name string
		req  uint
	}{{"TCSETS", unix.TCSETS}, {"TCSETSW", unix.TCSETSW}, {"TCSETSF", unix.TCSETSF}} {
		for _, want := range []*unix.Termios{&raw, cooked} {
			if err := unix.IoctlSetTermios(slave, set.req, want); err != nil {
				t.Fatalf("with the filter: ioctl(%s) = %v, want success", set.name, err)
			}
			got, err := unix.IoctlGetTermios(slave, unix.TCGETS)
			if err != nil {
				t.Fatalf("with the filter: ioctl(TCGETS) = %v", err)
			}
			if got.Lflag != want.Lflag || got.Iflag != want.Iflag || got.Oflag != want.Oflag || got.Cc[unix.VMIN] != want.Cc[unix.VMIN] {
				t.Errorf("with the filter: ioctl(%s) then ioctl(TCGETS) = lflag %#x iflag %#x oflag %#x, want %#x %#x %#x",
					set.name, got.Lflag, got.Iflag, got.Oflag, want.Lflag, want.Iflag, want.Oflag)
			}
			if set.req == unix.TCSETS && want == &raw && readable(t, slave, 200*time.Millisecond) {
				t.Errorf("with the filter: input is waiting on the pty after the denied TIOCSTI calls")
			}
		}
	}

	ws := &unix.Winsize{Row: 42, Col: 137, Xpixel: 1096, Ypixel: 840}
	if err := unix.IoctlSetWinsize(master, unix.TIOCSWINSZ, ws); err != nil {
		t.Fatalf("with the filter: ioctl(TIOCSWINSZ) = %v, want success", err)
	}
	if got, err := unix.IoctlGetWinsize(slave, unix.TIOCGWINSZ); err != nil || *got != *ws {
		t.Errorf("with the filter: ioctl(TIOCGWINSZ) = %+v, %v, want %+v", got, err, *ws)
	}

	pgrp := unix.Getpgrp()
	if got, err := unix.IoctlGetInt(slave, unix.TIOCGPGRP); err != nil || got != pgrp {
		t.Errorf("with the filter: ioctl(TIOCGPGRP) = %d, %v, want %d", got, err, pgrp)
	}
	if err := unix.IoctlSetPointerInt(slave, unix.TIOCSPGRP, pgrp); err != nil {
		t.Errorf("with the filter: ioctl(TIOCSPGRP, %d) = %v, want success", pgrp, err)
	}

	// Inheritance: a process forked from this thread (os/exec forks on the
	// calling thread, which is locked) keeps the filter across execve.
	dup, err := unix.Dup(slave)
	if err != nil {
		t.Fatalf("dup: %v", err)
	}
	f := os.NewFile(uintptr(dup), "pty slave")
	defer f.Close()
	runHelper(t, "grandchild", []*os.File{f}, nil)
	t.Log(helperDone)
}

func ttyGuardGrandchild(t *testing.T) {
	if got := statusField(t, "/proc/self/status", "Seccomp"); got != "2" {
		t.Errorf("Seccomp of the grandchild = %s, want 2 (inherited filter)", got)
	}
	// Same session as the child, so the pty is still the controlling
	// terminal: without the filter, TIOCSTI would succeed here.
	own, err := unix.Getsid(0)
	if err != nil {
		t.Fatalf("getsid: %v", err)
	}
	if sid, err := unix.IoctlGetInt(helperFD, unix.TIOCGSID); err != nil || sid != own {
		t.Fatalf("ioctl(TIOCGSID) on fd %d = %d, %v, want this session %d", helperFD, sid, err, own)
	}
	if err := tiocsti(helperFD, reqTIOCSTI, 'z'); !errors.Is(err, unix.EPERM) {
		t.Errorf("in the grandchild: ioctl(TIOCSTI) = %v, want EPERM", err)
	}
	if err := tiocsti(helperFD, 0xffffffff_00000000|reqTIOCSTI, 'z'); !errors.Is(err, unix.EPERM) {
		t.Errorf("in the grandchild: ioctl(TIOCSTI|0xffffffff<<32) = %v, want EPERM", err)
	}
	if ws, err := unix.IoctlGetWinsize(helperFD, unix.TIOCGWINSZ); err != nil || ws.Row != 42 || ws.Col != 137 {
		t.Errorf("in the grandchild: ioctl(TIOCGWINSZ) = %+v, %v, want 42 rows, 137 columns", ws, err)
	}
	t.Log(helperDone)
}

func TestInstallError(t *testing.T) {
	const op = "seccomp(SECCOMP_SET_MODE_FILTER)"
	for _, c := range []struct {
		errno unix.Errno
		want  string // the remedy's key words
	}{
		{unix.EACCES, "prctl(PR_SET_NO_NEW_PRIVS, 1)"},
		{unix.EINVAL, "CONFIG_SECCOMP_FILTER=y"},
		{unix.ENOSYS, "CONFIG_SECCOMP=y"},
		{unix.ENOMEM, "32768"},
		{unix.EFAULT, ""},
	} {
		err := installError(op, c.errno)
		msg := err.Error()
		if !errors.Is(err, c.errno) || !strings.HasPrefix(msg, op+": "+c.errno.Error()) || !strings.Contains(msg, c.want) {
			t.Errorf("installError(%q, %v) = %q (wraps errno: %v), want it to wrap the errno, start with the call and errno, and say %q",
				op, c.errno, msg, errors.Is(err, c.errno), c.want)
		}
	}
}
