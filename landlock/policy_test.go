package landlock

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseMode(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Mode
		ok   bool
	}{
		{"", Require, true},
		{"require", Require, true},
		{"best-effort", BestEffort, true},
		{"off", Off, true},
		{"Require", "", false},
		{"best_effort", "", false},
		{"besteffort", "", false},
		{"on", "", false},
		{" off", "", false},
	} {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseMode(%q) = %q, %v, want %q, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil {
			for _, m := range Modes {
				if !strings.Contains(err.Error(), string(m)) {
					t.Errorf("ParseMode(%q) error %q does not list %q", tt.in, err, m)
				}
			}
		}
	}
}

var (
	baseRights = []string{"write_file", "remove_dir", "remove_file", "make_char", "make_dir", "make_reg", "make_sock", "make_fifo", "make_block", "make_sym"}
	allFS      = append(slices.Clone(baseRights), "refer", "truncate", "ioctl_dev")
	allScopes  = []string{"scope:abstract_unix_socket", "scope:signal"}
)

// fsByABI is what each ABI can restrict of the filesystem rights agentbox
// handles, written out independently of the code under test.
var fsByABI = map[int][]string{
	0: nil,
	1: baseRights,
	2: append(slices.Clone(baseRights), "refer"),
	3: append(slices.Clone(baseRights), "refer", "truncate"),
	4: append(slices.Clone(baseRights), "refer", "truncate"),
	5: allFS,
	6: allFS,
	7: allFS,
	8: allFS,
}

func minus(all, some []string) []string {
	var out []string
	for _, a := range all {
		if !slices.Contains(some, a) {
			out = append(out, a)
		}
	}
	return out
}

func TestCompile(t *testing.T) {
	rules := Policy{
		Write:   []Rule{{Path: "/home/u/project", Source: "working directory"}, {Path: "/home/u/.bash_history", IsFile: true, Source: "--rw"}},
		Devices: []Rule{{Path: "/dev/null", Source: "default device"}, {Path: "/dev/pts", Source: "default device"}},
	}
	for abi := 0; abi <= 8; abi++ {
		for _, mode := range []Mode{"", Require, BestEffort, Off} {
			for _, scopes := range []bool{false, true} {
				p := rules
				p.Mode, p.Scopes = mode, scopes
				got, err := Compile(p, abi)
				name := fmt.Sprintf("Compile(mode %q, scopes %v, ABI %d)", mode, scopes, abi)

				wantAll := slices.Clone(allFS)
				wantHandled := slices.Clone(fsByABI[abi])
				if scopes {
					wantAll = append(wantAll, allScopes...)
					if abi >= 6 {
						wantHandled = append(wantHandled, allScopes...)
					}
				}
				need := 5
				if scopes {
					need = 6
				}
				wantMode := mode
				if mode == "" {
					wantMode = Require
				}

				var want Plan
				switch {
				case wantMode == Off:
					want = Plan{ABI: abi, Mode: Off, Unenforced: wantAll}
				case wantMode == Require && abi < need:
					if !errors.Is(err, ErrUnsupported) {
						t.Errorf("%s error = %v, want ErrUnsupported", name, err)
						continue
					}
					for _, s := range []string{fmt.Sprintf("ABI %d", abi), fmt.Sprintf("needs ABI %d", need), "--landlock=best-effort", minKernel[need], "lsm="} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("%s error %q does not say %q", name, err, s)
						}
					}
					continue
				default:
					want = Plan{ABI: abi, Mode: wantMode, Handled: wantHandled, Unenforced: minus(wantAll, wantHandled), Enforced: abi > 0}
					if len(want.Handled) == 0 {
						want.Handled = nil
					}
				}
				if err != nil {
					t.Errorf("%s error = %v, want nil", name, err)
					continue
				}
				if !plansEqual(got, want) {
					t.Errorf("%s = %+v, want %+v", name, got, want)
				}
			}
		}
	}
}

func plansEqual(a, b Plan) bool {
	return a.ABI == b.ABI && a.Mode == b.Mode && a.Enforced == b.Enforced &&
		slices.Equal(a.Handled, b.Handled) && slices.Equal(a.Unenforced, b.Unenforced)
}

// TestCompileAboveKnownABI: a kernel newer than this code restricts what
// the policy asks, nothing more.
func TestCompileAboveKnownABI(t *testing.T) {
	got, err := Compile(Policy{Scopes: true}, 42)
	want := Plan{ABI: 42, Mode: Require, Handled: append(slices.Clone(allFS), allScopes...), Enforced: true}
	if err != nil || !plansEqual(got, want) {
		t.Errorf("Compile(ABI 42) = %+v, %v, want %+v", got, err, want)
	}
}

func TestCompileInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    Policy
		abi  int
	}{
		{"negative ABI", Policy{}, -1},
		{"unknown mode", Policy{Mode: "strict"}, 7},
	} {
		if got, err := Compile(tt.p, tt.abi); err == nil || errors.Is(err, ErrUnsupported) {
			t.Errorf("Compile(%s) = %+v, %v, want an error other than ErrUnsupported", tt.name, got, err)
		}
	}
}

func TestCompileRuleValidation(t *testing.T) {
	for _, tt := range []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/home/u/project", true},
		{"/home/u/my project", true},
		{"/home/u/..hidden", true},
		{"/home/u/x..", true},
		{"", false},
		{"relative", false},
		{"./x", false},
		{"../x", false},
		{"/a/../b", false},
		{"/a/..", false},
		{"/..", false},
		{"/a/", false},
		{"//a", false},
		{"/a//b", false},
		{"/a/./b", false},
		{"/a/.", false},
		{"/a\x00b", false},
	} {
		for _, mode := range []Mode{Require, BestEffort, Off} {
			for _, kind := range []string{"write", "device"} {
				p := Policy{Mode: mode}
				r := []Rule{{Path: "/ok", Source: "default"}, {Path: tt.path, Source: "--rw"}}
				if kind == "write" {
					p.Write = r
				} else {
					p.Devices = r
				}
				_, err := Compile(p, 7)
				if tt.ok {
					if err != nil {
						t.Errorf("Compile(%s rule %q, %s) = %v, want nil", kind, tt.path, mode, err)
					}
					continue
				}
				if !errors.Is(err, ErrInvalidRule) {
					t.Errorf("Compile(%s rule %q, %s) = %v, want ErrInvalidRule", kind, tt.path, mode, err)
				} else if !strings.Contains(err.Error(), "--rw") || !strings.Contains(err.Error(), kind) {
					t.Errorf("Compile(%s rule %q, %s) = %q, want the rule's kind and source named", kind, tt.path, mode, err)
				}
			}
		}
	}
}

func TestNeedABI(t *testing.T) {
	if MinABI != 6 {
		t.Errorf("MinABI = %d, want 6 (scopes)", MinABI)
	}
	if got := NeedABI(Policy{Scopes: true}); got != MinABI {
		t.Errorf("NeedABI(Scopes) = %d, want %d", got, MinABI)
	}
	if got := NeedABI(Policy{}); got != 5 {
		t.Errorf("NeedABI(no Scopes) = %d, want 5", got)
	}
}

func TestSummary(t *testing.T) {
	full := strings.Join(allFS, ", ")
	for _, tt := range []struct {
		p    Policy
		abi  int
		want string
	}{
		{Policy{Scopes: true}, 7, "landlock ABI 7: enforced write rights (" + full + "), scopes abstract_unix_socket, signal"},
		{Policy{}, 5, "landlock ABI 5: enforced write rights (" + full + ")"},
		{Policy{Mode: Off, Scopes: true}, 7, "landlock off: nothing enforced (the kernel offers ABI 7)"},
		{Policy{Mode: Off}, 0, "landlock off: nothing enforced"},
		{Policy{Mode: BestEffort, Scopes: true}, 0, "landlock unavailable (ABI 0), best-effort: nothing enforced"},
		{Policy{Mode: BestEffort, Scopes: true}, 3, "landlock ABI 3 (best-effort): enforced write rights (" + strings.Join(fsByABI[3], ", ") + "); not enforced: ioctl_dev, scope:abstract_unix_socket, scope:signal"},
	} {
		plan, err := Compile(tt.p, tt.abi)
		if err != nil {
			t.Fatalf("Compile(%+v, %d) = %v", tt.p, tt.abi, err)
		}
		if got := plan.Summary(); got != tt.want {
			t.Errorf("Compile(%+v, %d).Summary() = %q, want %q", tt.p, tt.abi, got, tt.want)
		}
	}
}

func FuzzCompile(f *testing.F) {
	f.Add("/home/u/project", false, 7, "require", true)
	f.Add("/dev/null", true, 5, "best-effort", false)
	f.Add("/a/../b", false, 0, "off", true)
	f.Add("", true, -1, "", false)
	f.Add("/x//y/", false, 3, "best-effort", true)
	f.Fuzz(func(t *testing.T, path string, isFile bool, abi int, mode string, scopes bool) {
		p := Policy{Mode: Mode(mode), Write: []Rule{{Path: path, IsFile: isFile, Source: "fuzz"}}, Devices: []Rule{{Path: "/dev/null"}}, Scopes: scopes}
		plan, err := Compile(p, abi)
		_, modeErr := ParseMode(mode)
		validPath := filepath.IsAbs(path) && filepath.Clean(path) == path && !strings.ContainsRune(path, 0)
		switch {
		case modeErr != nil || abi < 0:
			if err == nil {
				t.Fatalf("Compile(mode %q, ABI %d) = nil error", mode, abi)
			}
			return
		case !validPath:
			if !errors.Is(err, ErrInvalidRule) {
				t.Fatalf("Compile(path %q) = %v, want ErrInvalidRule", path, err)
			}
			return
		case err != nil:
			if !errors.Is(err, ErrUnsupported) || plan.Mode != "" || (mode != "" && Mode(mode) != Require) || abi >= NeedABI(p) {
				t.Fatalf("Compile(%+v, %d) = %v", p, abi, err)
			}
			return
		}
		want := len(allFS)
		if scopes {
			want += len(allScopes)
		}
		if got := len(plan.Handled) + len(plan.Unenforced); got != want {
			t.Fatalf("Compile(%+v, %d): %d handled + unenforced, want %d: %+v", p, abi, got, want, plan)
		}
		for _, h := range plan.Handled {
			if slices.Contains(plan.Unenforced, h) {
				t.Fatalf("Compile(%+v, %d): %s both handled and unenforced", p, abi, h)
			}
		}
		if plan.Enforced != (len(plan.Handled) > 0) || (plan.Mode == Require && len(plan.Unenforced) > 0) || (plan.Mode == Off && plan.Enforced) {
			t.Fatalf("Compile(%+v, %d) = %+v: inconsistent", p, abi, plan)
		}
		if s := plan.Summary(); s == "" || strings.Contains(s, "\n") {
			t.Fatalf("Summary() = %q, want one line", s)
		}
	})
}
