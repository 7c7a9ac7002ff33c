// Command agentbox-mcp-example is a minimal MCP server on the stdio
// transport, written to show an MCP server running under agentbox. Its one
// tool, tmpdir, reports what the server sees: TMPDIR, the owner, mode and
// entries of /tmp, and AGENTBOX_SESSION. Under agentbox /tmp is the
// session's own (mode 0700, empty at first) and AGENTBOX_SESSION names the
// session; without it, /tmp is the host's shared one.
//
//	go build -o ~/.local/bin/agentbox-mcp-example ./examples/mcp/server
//	agentbox -- agentbox-mcp-example   # what examples/mcp/.mcp.json runs
//
// The transport, as MCP specifies it for stdio: one JSON-RPC 2.0 message per
// line on stdin, one response per line on stdout, nothing else on stdout.
// It answers initialize, ping, tools/list and tools/call, ignores
// notifications (notifications/initialized among them) and responses, and
// answers anything else that has an id with a JSON-RPC error. Each response
// is written with one write(2) on the unbuffered stdout before the next
// message is read, so there is nothing left to flush: at end of input, every
// message read (the last one may lack its newline) has been answered, and it
// exits 0. It uses the standard library only.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"syscall"
	"unicode/utf8"
)

const (
	serverName    = "agentbox-mcp-example"
	serverVersion = "1.0.0"
	toolName      = "tmpdir"
	// maxEntries bounds the /tmp listing: the host's /tmp can be large.
	maxEntries = 100
)

// protocolVersions are the MCP revisions this server speaks, newest first.
// Its one tool looks the same in all of them.
var protocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// JSON-RPC 2.0 error codes.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
)

func main() {
	if err := serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", serverName, err)
		os.Exit(1)
	}
}

// serve answers the messages on in, one per line, on out until in ends.
// Lines may be of any length. Each response goes to out in a single Write
// before the next line is read.
func serve(in io.Reader, out io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if resp := handle(line); resp != nil {
				if _, werr := out.Write(resp); werr != nil {
					return fmt.Errorf("write stdout: %w", werr)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// response is a JSON-RPC response; exactly one of Result and Error is set.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

var null = json.RawMessage("null")

// handle returns the response to one line, newline included, or nil when
// the line needs none (a notification, a response, a blank line).
func handle(line []byte) []byte {
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	// MCP messages are UTF-8; encoding/json alone would accept other bytes
	// inside strings.
	if !utf8.Valid(line) || !json.Valid(line) {
		return fail(null, codeParseError, "parse error: not a JSON text in UTF-8")
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(line, &msg); err != nil {
		// Valid JSON, but not an object: batches included, which MCP
		// dropped in its 2025-06-18 revision.
		return fail(null, codeInvalidRequest, "invalid request: not a JSON object")
	}
	id, hasID := msg["id"]
	if hasID && !validID(id) {
		return fail(null, codeInvalidRequest, "invalid request: id must be a string or a number")
	}
	if !hasID {
		id = null
	}
	rawMethod, hasMethod := msg["method"]
	if !hasMethod {
		if _, ok := msg["result"]; ok && hasID {
			return nil // a response to a request of ours; we send none
		}
		if _, ok := msg["error"]; ok && hasID {
			return nil
		}
		return fail(id, codeInvalidRequest, "invalid request: no method")
	}
	var method, version string
	if json.Unmarshal(rawMethod, &method) != nil {
		return fail(id, codeInvalidRequest, "invalid request: method must be a string")
	}
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" {
		return fail(id, codeInvalidRequest, `invalid request: jsonrpc must be "2.0"`)
	}
	if !hasID {
		// A notification is never answered, not even with an error:
		// notifications/initialized, notifications/cancelled and any other.
		return nil
	}
	params := msg["params"]
	switch method {
	case "initialize":
		return initialize(id, params)
	case "ping":
		return reply(id, struct{}{})
	case "tools/list":
		return reply(id, map[string]any{"tools": []any{toolDefinition}})
	case "tools/call":
		return callTool(id, params)
	}
	return fail(id, codeMethodNotFound, "method not found: "+method)
}

// validID reports whether raw is an id MCP allows: a string or a number
// (JSON-RPC allows null; MCP does not).
func validID(raw json.RawMessage) bool {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return false
	}
	switch v.(type) {
	case string, float64:
		return true
	}
	return false
}

func initialize(id, params json.RawMessage) []byte {
	var p struct {
		ProtocolVersion *string `json:"protocolVersion"`
	}
	if json.Unmarshal(params, &p) != nil || p.ProtocolVersion == nil {
		return fail(id, codeInvalidParams, "invalid params: initialize needs params.protocolVersion")
	}
	// The client's version when this server speaks it, else this server's
	// newest: the client then decides whether it can go on.
	version := protocolVersions[0]
	if slices.Contains(protocolVersions, *p.ProtocolVersion) {
		version = *p.ProtocolVersion
	}
	return reply(id, map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": serverName, "version": serverVersion},
		"instructions":    "Call the tmpdir tool to see this server's TMPDIR, /tmp and agentbox session.",
	})
}

// toolDefinition is the tmpdir tool as tools/list describes it.
var toolDefinition = map[string]any{
	"name":        toolName,
	"title":       "Temporary directory",
	"description": "Report this server's TMPDIR, the owner, mode and entries of /tmp, and AGENTBOX_SESSION (empty when not run by agentbox).",
	"inputSchema": map[string]any{"type": "object", "properties": map[string]any{}},
	"outputSchema": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"tmpdir":            map[string]any{"type": "string"},
			"agentbox_session":  map[string]any{"type": "string"},
			"uid":               map[string]any{"type": "integer"},
			"tmp_uid":           map[string]any{"type": "integer"},
			"tmp_mode":          map[string]any{"type": "string"},
			"tmp_entries":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"tmp_entries_total": map[string]any{"type": "integer"},
		},
		"required": []string{"tmpdir", "agentbox_session", "uid", "tmp_uid", "tmp_mode", "tmp_entries", "tmp_entries_total"},
	},
	"annotations": map[string]any{"readOnlyHint": true},
}

// report is the tmpdir tool's result.
type report struct {
	TMPDIR          string   `json:"tmpdir"`
	AgentboxSession string   `json:"agentbox_session"`
	UID             int      `json:"uid"`
	TmpUID          int      `json:"tmp_uid"`
	TmpMode         string   `json:"tmp_mode"` // permission bits in octal, "0700" or "1777"
	TmpEntries      []string `json:"tmp_entries"`
	TmpEntriesTotal int      `json:"tmp_entries_total"`
}

func callTool(id, params json.RawMessage) []byte {
	var p struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(params, &p) != nil || p.Name == nil {
		return fail(id, codeInvalidParams, "invalid params: tools/call needs params.name")
	}
	if *p.Name != toolName {
		return fail(id, codeInvalidParams, "unknown tool: "+*p.Name)
	}
	rep, err := look()
	if err != nil {
		// A failure of the tool, not of the protocol: the model reads it.
		return reply(id, map[string]any{
			"content": []any{map[string]any{"type": "text", "text": err.Error()}},
			"isError": true,
		})
	}
	text, err := json.Marshal(rep)
	if err != nil {
		panic(err) // a report always marshals
	}
	return reply(id, map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": string(text)}},
		"structuredContent": rep,
		"isError":           false,
	})
}

// look gathers the report.
func look() (report, error) {
	rep := report{
		TMPDIR:          os.Getenv("TMPDIR"),
		AgentboxSession: os.Getenv("AGENTBOX_SESSION"),
		UID:             os.Getuid(),
		TmpEntries:      []string{},
	}
	var st syscall.Stat_t
	if err := syscall.Lstat("/tmp", &st); err != nil {
		return rep, fmt.Errorf("lstat /tmp: %w", err)
	}
	rep.TmpUID = int(st.Uid)
	rep.TmpMode = fmt.Sprintf("%04o", st.Mode&0o7777)
	entries, err := os.ReadDir("/tmp")
	if err != nil {
		return rep, fmt.Errorf("read /tmp: %w", err)
	}
	rep.TmpEntriesTotal = len(entries)
	for _, e := range entries[:min(len(entries), maxEntries)] {
		rep.TmpEntries = append(rep.TmpEntries, e.Name())
	}
	return rep, nil
}

func reply(id json.RawMessage, result any) []byte {
	return encode(response{JSONRPC: "2.0", ID: id, Result: result})
}

func fail(id json.RawMessage, code int, message string) []byte {
	return encode(response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: message}})
}

// encode returns r as one line. HTML escaping is off so that the request's
// id comes back byte for byte; json.Encoder ends the line with '\n' and
// never puts a raw newline inside it.
func encode(r response) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		panic(err) // every response is made of types that marshal
	}
	return b.Bytes()
}
