//go:build linux

package tests

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

// The MCP example (examples/mcp) run the way its .mcp.json says, as an MCP
// client runs a stdio server: agentbox's stdin and stdout are the client's
// pipes, so agentbox must neither add, drop, reorder nor hold back a byte in
// either direction, and must let the server see end of input and finish.

// mcpConfigPath is the example MCP client configuration under test.
const mcpConfigPath = "../examples/mcp/.mcp.json"

// mcpIOTimeout bounds each wait for the command's output: a response that
// never comes (held in a buffer, lost) fails the test instead of hanging it.
const mcpIOTimeout = 30 * time.Second

// mcpExampleCommand reads examples/mcp/.mcp.json and returns the arguments
// and environment that run its server through agentbox as a client would:
// the configured command must be agentbox and its arguments "--" and the
// server, which is looked up on a PATH that starts with the suite
// directory, where TestMain built examples/mcp/server. The configured
// "env" is added to the environment.
func mcpExampleCommand(t *testing.T) (args, env []string) {
	t.Helper()
	b, err := os.ReadFile(mcpConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%s: %v", mcpConfigPath, err)
	}
	if len(cfg.MCPServers) != 1 {
		t.Fatalf("%s: %d servers in mcpServers, want 1", mcpConfigPath, len(cfg.MCPServers))
	}
	for name, s := range cfg.MCPServers {
		if s.Command != filepath.Base(agentboxBin) {
			t.Fatalf("%s: server %q: command %q, want %q", mcpConfigPath, name, s.Command, filepath.Base(agentboxBin))
		}
		if len(s.Args) < 2 || s.Args[0] != "--" {
			t.Fatalf("%s: server %q: args %q, want \"--\" and the server's command", mcpConfigPath, name, s.Args)
		}
		if p := filepath.Join(suiteDir, s.Args[1]); p != mcpServerBin {
			t.Fatalf("%s: server %q runs %q; the tests build examples/mcp/server as %s", mcpConfigPath, name, s.Args[1], mcpServerBin)
		}
		env = []string{"PATH=" + suiteDir + ":/usr/local/bin:/usr/bin:/bin"}
		for k, v := range s.Env {
			env = append(env, k+"="+v)
		}
		args = s.Args
	}
	return args, env
}

// pipe returns a new pipe whose ends are closed when the test ends (if the
// test has not closed them already).
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// mcpConn is a started command whose stdin and stdout are pipes the test
// holds, read and written directly: nothing between the test and the
// command buffers a byte.
type mcpConn struct {
	t   *testing.T
	p   *proc
	in  *os.File // the write end of the command's stdin
	out *os.File // the read end of its stdout
	r   *bufio.Reader
}

// startConn starts cmd with its stdin and stdout on new pipes; its stderr
// is collected by start.
func startConn(t *testing.T, cmd *exec.Cmd) *mcpConn {
	t.Helper()
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	cmd.Stdin, cmd.Stdout = inR, outW
	p := start(t, cmd)
	// The command has its own copies of these ends. The test's must go:
	// while it holds them, the command never sees the end of its input and
	// the test never sees the end of the output.
	inR.Close()
	outW.Close()
	return &mcpConn{t: t, p: p, in: inW, out: outR, r: bufio.NewReader(outR)}
}

// send writes one message and its newline.
func (c *mcpConn) send(msg string) {
	c.t.Helper()
	if _, err := c.in.WriteString(msg + "\n"); err != nil {
		c.t.Fatalf("write %.80q: %v (%v)", msg, err, c.p.wait())
	}
}

// line reads the next line of output, newline included.
func (c *mcpConn) line() []byte {
	c.t.Helper()
	c.out.SetReadDeadline(time.Now().Add(mcpIOTimeout))
	l, err := c.r.ReadBytes('\n')
	if err != nil {
		if c.p.exited() {
			c.t.Fatalf("reading a response: %v after %q; the command ended: %v", err, l, c.p.wait())
		}
		c.t.Fatalf("reading a response: %v after %q (a response held back?)", err, l)
	}
	return l
}

// rest closes the command's stdin and returns all the output that follows.
func (c *mcpConn) rest() []byte {
	c.t.Helper()
	c.in.Close()
	c.out.SetReadDeadline(time.Now().Add(mcpIOTimeout))
	b, err := io.ReadAll(c.r)
	if err != nil {
		c.t.Fatalf("reading the output to its end: %v after %d bytes", err, len(b))
	}
	return b
}

// rpcResponse is a JSON-RPC 2.0 response as the tests read it.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// parseResponse decodes line as the response to the request with id (raw
// JSON, compared byte for byte), failing the test unless it is one
// newline-terminated line holding a JSON object with exactly the members
// jsonrpc "2.0", that id, and a result or an error.
func parseResponse(t *testing.T, line []byte, id string) rpcResponse {
	t.Helper()
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("response %.200q is not one newline-terminated line", line)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(line, &members); err != nil {
		t.Fatalf("response %.200q: %v", line, err)
	}
	keys := slices.Sorted(maps.Keys(members))
	if !slices.Equal(keys, []string{"id", "jsonrpc", "result"}) && !slices.Equal(keys, []string{"error", "id", "jsonrpc"}) {
		t.Fatalf("response %.200q has members %q, want jsonrpc, id and one of result, error", line, keys)
	}
	var r rpcResponse
	if err := json.Unmarshal(line, &r); err != nil {
		t.Fatalf("response %.200q: %v", line, err)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("response %.200q: jsonrpc %q, want \"2.0\"", line, r.JSONRPC)
	}
	if string(r.ID) != id {
		i := firstDiff(r.ID, []byte(id))
		t.Fatalf("response %.200q: id of %d bytes, want %d; they part at byte %d: %.40q, want %.40q",
			line, len(r.ID), len(id), i, r.ID[i:min(len(r.ID), i+40)], id[i:min(len(id), i+40)])
	}
	return r
}

// wantRPCError fails the test unless r is an error with code.
func wantRPCError(t *testing.T, what string, r rpcResponse, code int) {
	t.Helper()
	if r.Error == nil || r.Error.Code != code {
		t.Errorf("%s: result %s, error %+v; want error code %d", what, r.Result, r.Error, code)
	}
}

// tmpdirReport is the result of the example server's tmpdir tool.
type tmpdirReport struct {
	TMPDIR          string   `json:"tmpdir"`
	AgentboxSession string   `json:"agentbox_session"`
	UID             int      `json:"uid"`
	TmpUID          int      `json:"tmp_uid"`
	TmpMode         string   `json:"tmp_mode"`
	TmpEntries      []string `json:"tmp_entries"`
	TmpEntriesTotal int      `json:"tmp_entries_total"`
}

// TestMCPExampleHandshake runs the example server as examples/mcp/.mcp.json
// says, as a real user, and talks MCP to it one message at a time, as a
// client does: each response must arrive while the server waits for the
// next request (nothing held in a buffer), the tool must report the
// session's private /tmp, and the session must be the real, live one.
func TestMCPExampleHandshake(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	args, env := mcpExampleCommand(t)
	// A name in the host's /tmp that the server must not see.
	marker := "/tmp/abtest-mcp-" + token(t)
	touch(t, marker)
	t.Cleanup(func() { os.Remove(marker) })

	cmd := a.agentbox(env, args...)
	cmd.Dir = a.project(t) // a client starts the server in the project
	c := startConn(t, cmd)

	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abtest","version":"0"}}}`)
	var initResult struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(parseResponse(t, c.line(), "1").Result, &initResult); err != nil {
		t.Fatalf("initialize result: %v", err)
	}
	if initResult.ProtocolVersion != "2025-06-18" || initResult.Capabilities.Tools == nil || initResult.ServerInfo.Name != "agentbox-mcp-example" {
		t.Errorf("initialize result %+v: want protocol 2025-06-18, the tools capability, server agentbox-mcp-example", initResult)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.send(`{"jsonrpc":"2.0","id":"list","method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			InputSchema struct {
				Type string `json:"type"`
			} `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(parseResponse(t, c.line(), `"list"`).Result, &list); err != nil {
		t.Fatalf("tools/list result: %v", err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != "tmpdir" || list.Tools[0].InputSchema.Type != "object" {
		t.Fatalf("tools/list: %+v, want the one tool tmpdir with an object input schema", list.Tools)
	}

	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"tmpdir","arguments":{}}}`)
	var call struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent tmpdirReport `json:"structuredContent"`
		IsError           bool         `json:"isError"`
	}
	if err := json.Unmarshal(parseResponse(t, c.line(), "3").Result, &call); err != nil {
		t.Fatalf("tools/call result: %v", err)
	}
	rep := call.StructuredContent
	var fromText tmpdirReport
	if call.IsError || len(call.Content) != 1 || call.Content[0].Type != "text" || json.Unmarshal([]byte(call.Content[0].Text), &fromText) != nil {
		t.Fatalf("tools/call tmpdir: %+v, want one text block holding the report", call)
	}
	if fmt.Sprint(fromText) != fmt.Sprint(rep) {
		t.Errorf("tools/call tmpdir: text %+v and structuredContent %+v differ", fromText, rep)
	}
	if rep.TMPDIR != "/tmp" || !sessionIDRe.MatchString(rep.AgentboxSession) || rep.UID != a.UID || rep.TmpUID != a.UID || rep.TmpMode != "0700" {
		t.Errorf("tmpdir reports %+v; want TMPDIR /tmp, a session id, and /tmp owned by uid %d with mode 0700", rep, a.UID)
	}
	if slices.Contains(rep.TmpEntries, filepath.Base(marker)) {
		t.Errorf("the server's /tmp holds %s, made in the host's /tmp: not private (%+v)", filepath.Base(marker), rep)
	}
	// The session the server reports is the one agentbox is running.
	sessionDir := filepath.Join(a.Home, ".local", "state", "agentbox", rep.AgentboxSession)
	if !exists(t, sessionDir) {
		t.Errorf("session %s: no %s while the server runs", rep.AgentboxSession, sessionDir)
	}

	c.send(`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`)
	wantRPCError(t, "resources/list", parseResponse(t, c.line(), "4"), -32601)
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"no-such-tool"}}`)
	wantRPCError(t, "tools/call of an unknown tool", parseResponse(t, c.line(), "5"), -32602)
	// An unknown notification gets no answer: the next line is the ping's.
	c.send(`{"jsonrpc":"2.0","method":"notifications/abtest"}`)
	c.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	if r := parseResponse(t, c.line(), "6"); string(r.Result) != "{}" {
		t.Errorf("ping: result %s, want {}", r.Result)
	}

	if rest := c.rest(); len(rest) != 0 {
		t.Errorf("after the last response, stdout carried %.200q, want nothing", rest)
	}
	r := c.p.wait()
	wantCode(t, "agentbox -- agentbox-mcp-example", r, 0)
	if len(r.stderr) != 0 {
		t.Errorf("stderr %q, want nothing", r.stderr)
	}
	if exists(t, sessionDir) {
		t.Errorf("session directory %s left after the server ended", sessionDir)
	}
}

// hostilePayload returns about 5.5 MiB that a copier which reads text,
// lines or UTF-8 would damage: every byte value and every pair of byte
// values, malformed UTF-8, NULs, CR LF and lone CRs, lines just under, at
// and over 64 KiB (bufio.Scanner's default limit) and of 1 MiB, 4 MiB of
// random bytes, and a last line of 100 KiB with no newline.
func hostilePayload(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := range 256 {
		b.WriteByte(byte(i))
	}
	for v := range 1 << 16 {
		b.WriteByte(byte(v >> 8))
		b.WriteByte(byte(v))
	}
	for _, s := range []string{"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf8\x88\x80\x80\x80", "\xff\xfe", "\x80\xbf", "\xe2\x82", "\xf0\x9f\x98", "\x00\x00", "\r\n", "\r", "\n\n"} {
		b.WriteString(s)
	}
	// Long lines of every byte value but the newline.
	long := func(n int) []byte {
		l := make([]byte, n)
		for i := range l {
			if l[i] = byte(i % 255); l[i] == '\n' {
				l[i] = 255
			}
		}
		return l
	}
	for _, n := range []int{64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20} {
		b.Write(long(n))
		b.WriteByte('\n')
	}
	random := make([]byte, 4<<20)
	if _, err := rand.Read(random); err != nil {
		t.Fatal(err)
	}
	b.Write(random)
	b.WriteByte('\n')
	b.Write(long(100 << 10))

	p := b.Bytes()
	// The fixture itself: what it must hold for the test to mean anything.
	maxLine := 0
	for _, l := range bytes.Split(p, []byte("\n")) {
		maxLine = max(maxLine, len(l))
	}
	if utf8.Valid(p) || maxLine <= 64<<10 || p[len(p)-1] == '\n' || len(p) < 5<<20 {
		t.Fatalf("payload: valid UTF-8 %v, longest line %d, ends with a newline %v, %d bytes", utf8.Valid(p), maxLine, p[len(p)-1] == '\n', len(p))
	}
	return p
}

// firstDiff returns the offset of the first byte where a and b differ, or
// the length of the shorter when one is a prefix of the other.
func firstDiff(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// sameBytes fails the test unless got is want, saying where they part.
func sameBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := firstDiff(got, want)
	t.Errorf("%s: %d bytes (sha256 %x), want %d bytes (sha256 %x); first difference at byte %d: %.40q, want %.40q",
		what, len(got), sha256.Sum256(got), len(want), sha256.Sum256(want), i, got[i:min(len(got), i+40)], want[i:min(len(want), i+40)])
}

// TestMCPByteStreamUntouched sends bytes no text channel would carry intact
// through agentbox, both ways, as a real user: to cat, which streams them
// back, and to a command that reads all of its input before it writes (so
// that the end of input must arrive after the last byte, and the output
// must be complete though it starts only then). stdout must carry exactly
// the command's bytes, stderr nothing. The last case shows why: the
// command's stdin, stdout and stderr are the very pipes the caller made,
// not copies that agentbox relays.
func TestMCPByteStreamUntouched(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	payload := hostilePayload(t)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"cat", []string{"cat"}},
		{"read all then write", []string{"sh", "-c", `cat >"$TMPDIR/spool" && exec cat "$TMPDIR/spool"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := a.agentbox(nil, append([]string{"--"}, tc.argv...)...)
			cmd.Dir = a.project(t)
			cmd.Stdin = bytes.NewReader(payload)
			r := run(t, cmd)
			wantCode(t, "agentbox -- "+strings.Join(tc.argv, " "), r, 0)
			sameBytes(t, "stdout of agentbox -- "+strings.Join(tc.argv, " "), r.stdout, payload)
			if len(r.stderr) != 0 {
				t.Errorf("stderr %q, want nothing", clip(r.stderr))
			}
		})
	}
	t.Run("same open files", func(t *testing.T) {
		t.Parallel()
		var ends [3]*os.File // the command's stdin, stdout, stderr
		var ours [3]*os.File // the test's ends of the same pipes
		var want [3]string   // readlink of each, as the command must see it
		for i := range ends {
			r, w := pipe(t)
			ends[i], ours[i] = w, r
			if i == 0 {
				ends[i], ours[i] = r, w
			}
			fi, err := ends[i].Stat()
			if err != nil {
				t.Fatal(err)
			}
			want[i] = fmt.Sprintf("pipe:[%d]", fi.Sys().(*syscall.Stat_t).Ino)
		}
		cmd := a.agentbox(nil, "--", "readlink", "/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2")
		cmd.Dir = a.project(t)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[1], ends[2]
		p := start(t, cmd)
		for _, f := range ends {
			f.Close()
		}
		ours[0].Close()
		var got [3][]byte
		for i := 1; i < 3; i++ {
			ours[i].SetReadDeadline(time.Now().Add(mcpIOTimeout))
			b, err := io.ReadAll(ours[i])
			if err != nil {
				t.Fatalf("reading fd %d: %v", i, err)
			}
			got[i] = b
		}
		wantCode(t, "agentbox -- readlink /proc/self/fd/{0,1,2}", p.wait(), 0)
		if string(got[1]) != strings.Join(want[:], "\n")+"\n" || len(got[2]) != 0 {
			t.Errorf("the command's fds 0, 1, 2 are %q (stderr %q); want the caller's pipes %q", got[1], got[2], want)
		}
	})
}

// mcpTranscript is a session of requests for the example server that needs
// no tool call (whose answer differs from run to run), so that its replies
// are the same bytes with and without agentbox. Its ids are long strings
// that put every JSON escape, UTF-8 of every length, U+2028, escaped lone
// surrogates and "<>&" on lines longer than 64 KiB, which the server must
// echo byte for byte; there are malformed lines, a CR LF line, and a last
// line without a newline. want lists, for each reply in order, the raw id
// and the error code (0: a result).
func mcpTranscript() (transcript []byte, want []mcpReply) {
	var b bytes.Buffer
	add := func(line, id string, code int) {
		b.WriteString(line)
		if id != "" {
			want = append(want, mcpReply{id, code})
		}
	}
	add(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abtest","version":"0"}}}`+"\n", "1", 0)
	add(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n", "", 0)
	add(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n", "2", 0)
	var tricky strings.Builder
	for i := range 0x20 {
		fmt.Fprintf(&tricky, `\u%04x`, i)
	}
	tricky.WriteString(`\"\\\/\b\f\n\r\t <>& é € 𝄞 ` + "\u2028\u2029" + ` \ud800 \udfff \ud834\udd1e`)
	unit := tricky.String()
	// Lines from just under 64 KiB to far over it, and one of over 1 MiB.
	for i := range 49 {
		n := (64<<10)/len(unit) - 2 + i*8
		if i == 48 {
			n = (1 << 20) / len(unit)
		}
		id := `"` + strconv.Itoa(i) + " " + strings.Repeat(unit, n) + `"`
		add(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`+"\n", id, 0)
	}
	for _, id := range []string{"0", "-1", "1.5e3", "12345678901234567890", `""`} {
		add(`{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`+"\n", id, 0)
	}
	add(`{"jsonrpc":"2.0","id":"crlf","method":"ping"}`+"\r\n", `"crlf"`, 0)
	add(`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`+"\n", "7", -32601)
	add(`{"jsonrpc":"2.0","method":"notifications/no-such-notification"}`+"\n", "", 0)
	add(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"no-such-tool"}}`+"\n", "8", -32602)
	add(`{"jsonrpc":"2.0","id":9,"method":"initialize"}`+"\n", "9", -32602)
	add(`{"jsonrpc":"2.0", "id": 10,`+"\n", "null", -32700)
	add("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}\n", "null", -32700)
	add(`[{"jsonrpc":"2.0","id":11,"method":"ping"}]`+"\n", "null", -32600)
	add(`{"jsonrpc":"2.0","id":12}`+"\n", "12", -32600)
	add(`{"jsonrpc":"2.0","id":"last","method":"ping"}`, `"last"`, 0)
	return b.Bytes(), want
}

// mcpReply is one expected reply: its raw id and error code (0: a result).
type mcpReply struct {
	id   string
	code int
}

// checkReplies fails the test unless out is exactly the replies in want,
// one per line, in order.
func checkReplies(t *testing.T, what string, out []byte, want []mcpReply) {
	t.Helper()
	lines := bytes.SplitAfter(out, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != len(want) {
		t.Fatalf("%s: %d lines of output, want %d replies", what, len(lines), len(want))
	}
	for i, w := range want {
		r := parseResponse(t, lines[i], w.id)
		if w.code == 0 && r.Error != nil {
			t.Errorf("%s: reply %d (id %.40s): error %+v, want a result", what, i, w.id, r.Error)
		}
		if w.code != 0 {
			wantRPCError(t, fmt.Sprintf("%s: reply %d (id %.40s)", what, i, w.id), r, w.code)
		}
	}
}

// TestMCPFramesUntouched sends a session of JSON-RPC frames, 5 MiB with
// lines far over 64 KiB, to the example server twice as a real user: as it
// is, and as the .mcp.json runs it, through agentbox. The two outputs must
// be the same bytes, every request with an id must be answered in order,
// with its id echoed byte for byte, and the last line, which has no
// newline, must be answered too.
func TestMCPFramesUntouched(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	args, env := mcpExampleCommand(t)
	transcript, want := mcpTranscript()
	p := a.project(t)

	direct := a.Cmd(mcpServerBin)
	direct.Dir = p
	direct.Stdin = bytes.NewReader(transcript)
	rd := run(t, direct)
	wantCode(t, "agentbox-mcp-example without agentbox", rd, 0)
	checkReplies(t, "without agentbox", rd.stdout, want)

	boxed := a.agentbox(env, args...)
	boxed.Dir = p
	boxed.Stdin = bytes.NewReader(transcript)
	rb := run(t, boxed)
	wantCode(t, "agentbox -- agentbox-mcp-example", rb, 0)
	checkReplies(t, "through agentbox", rb.stdout, want)
	sameBytes(t, "stdout through agentbox against stdout without it", rb.stdout, rd.stdout)
	for _, r := range []result{rd, rb} {
		if len(r.stderr) != 0 {
			t.Errorf("stderr %q, want nothing", clip(r.stderr))
		}
	}
}

// TestMCPClientClosesStdinFirst writes a whole session of requests and
// closes stdin before it reads a byte, as a client that sends a batch and
// hangs up does; once before agentbox starts (the requests and the end of
// input are all waiting in the pipe) and once just after. Every request
// must be answered, in order, the server must end on its own with status 0
// and agentbox with it, and nothing may follow the last reply.
func TestMCPClientClosesStdinFirst(t *testing.T) {
	t.Parallel()
	a, _ := users(t)
	args, env := mcpExampleCommand(t)
	const n = 1000
	var reqs bytes.Buffer
	want := []mcpReply{{"1", 0}}
	reqs.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"abtest","version":"0"}}}` + "\n")
	reqs.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	for i := 2; i <= n; i++ {
		method, params, code := "ping", "", 0
		switch i % 4 {
		case 1:
			method = "tools/list"
		case 2:
			method, params = "tools/call", `,"params":{"name":"tmpdir","arguments":{}}`
		case 3:
			method, code = "no/such/method", -32601
		}
		fmt.Fprintf(&reqs, `{"jsonrpc":"2.0","id":%d,"method":%q%s}`+"\n", i, method, params)
		want = append(want, mcpReply{strconv.Itoa(i), code})
	}
	// The test writes everything before it reads: the pipe must hold it all.
	const pipeSize = 1 << 20
	if reqs.Len() > pipeSize {
		t.Fatalf("%d bytes of requests do not fit a %d-byte pipe", reqs.Len(), pipeSize)
	}
	for _, before := range []bool{true, false} {
		name := map[bool]string{true: "closed before agentbox starts", false: "closed just after"}[before]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inR, inW := pipe(t)
			outR, outW := pipe(t)
			if _, err := unix.FcntlInt(inW.Fd(), unix.F_SETPIPE_SZ, pipeSize); err != nil {
				t.Fatalf("fcntl F_SETPIPE_SZ %d: %v", pipeSize, err)
			}
			send := func() {
				if _, err := inW.Write(reqs.Bytes()); err != nil {
					t.Fatal(err)
				}
				inW.Close()
			}
			cmd := a.agentbox(env, args...)
			cmd.Dir = a.project(t)
			cmd.Stdin, cmd.Stdout = inR, outW
			if before {
				send()
			}
			p := start(t, cmd)
			inR.Close()
			outW.Close()
			if !before {
				send()
			}
			outR.SetReadDeadline(time.Now().Add(mcpIOTimeout))
			out, err := io.ReadAll(outR)
			if err != nil {
				t.Fatalf("reading the replies: %v after %d bytes", err, len(out))
			}
			r := p.wait()
			wantCode(t, "agentbox -- agentbox-mcp-example", r, 0)
			if len(r.stderr) != 0 {
				t.Errorf("stderr %q, want nothing", clip(r.stderr))
			}
			checkReplies(t, "replies after stdin closed", out, want)
		})
	}
}
