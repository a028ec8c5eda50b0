package mcpexport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/berth-mcp/berth/internal/mcpotel"
	"github.com/berth-mcp/berth/review"
)

// MaxArgumentDepth is how deeply objects and arrays may nest in the
// arguments of a tool call, a prompt or a resource read (the arguments
// object itself is level 1).
const MaxArgumentDepth = 32

// ErrAmbiguousArguments marks arguments berth refuses before any
// decision, because a reader could take them to mean something else than
// what an approver would be shown: duplicate keys, invalid UTF-8, lone
// surrogate escapes, nesting deeper than MaxArgumentDepth.
var ErrAmbiguousArguments = errors.New("ambiguous arguments")

// ArgumentError says what is wrong with arguments, and where.
type ArgumentError struct {
	// Path is where in the document, as a JSON path ("arguments.opts.path",
	// "[2]"); empty for the document itself.
	Path string
	// Problem is what is wrong.
	Problem string
}

func (e *ArgumentError) Error() string {
	at := ""
	if e.Path != "" {
		at = e.Path + ": "
	}
	return fmt.Sprintf("%s%s (berth refuses such arguments before any decision: what an approver is shown could differ from what the server reads)", at, e.Problem)
}

func (e *ArgumentError) Unwrap() error { return ErrAmbiguousArguments }

// checkStrict checks a well-formed JSON document (json.Valid) for what
// makes JSON ambiguous: a key twice in one object (after unescaping),
// invalid UTF-8, an escaped lone UTF-16 surrogate, or objects and arrays
// nested deeper than maxDepth. prefix starts the paths of its errors.
func checkStrict(data []byte, maxDepth int, prefix string) error {
	return checkStrictAt(data, maxDepth, 0, prefix)
}

// checkStrictAt is checkStrict for a document whose arguments start outer
// levels deep (a message: 2, params: 1), so that errors count levels of
// the arguments.
func checkStrictAt(data []byte, maxDepth, outer int, prefix string) error {
	if !utf8.Valid(data) {
		off := 0
		for off < len(data) {
			r, n := utf8.DecodeRune(data[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return &ArgumentError{Path: prefix, Problem: fmt.Sprintf("the JSON is not valid UTF-8 (byte 0x%02x at offset %d); send text as UTF-8", data[off], off)}
	}
	type frame struct {
		obj   bool
		keys  map[string]struct{}
		key   string // the current key (objects)
		index int    // the current index (arrays)
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		b.WriteString(prefix)
		for _, f := range stack {
			if f.obj {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(review.PrintableLines(f.key))
			} else {
				fmt.Fprintf(&b, "[%d]", f.index)
			}
		}
		return b.String()
	}
	expectKey := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			if len(stack) >= maxDepth {
				return &ArgumentError{Path: path(), Problem: fmt.Sprintf("objects and arrays nest deeper than %d levels; flatten the arguments", maxDepth-outer)}
			}
			stack = append(stack, &frame{obj: c == '{'})
			expectKey = c == '{'
		case '}', ']':
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if top := stack[len(stack)-1]; top.obj {
				expectKey = true
			} else {
				top.index++
			}
		case '"':
			end, s, err := scanString(data, i)
			if err != nil {
				if expectKey {
					return &ArgumentError{Path: path(), Problem: "a key " + err.Error()}
				}
				return &ArgumentError{Path: path(), Problem: "a string " + err.Error()}
			}
			if expectKey {
				top := stack[len(stack)-1]
				if top.keys == nil {
					top.keys = map[string]struct{}{}
				}
				top.key = s
				if _, dup := top.keys[s]; dup {
					return &ArgumentError{Path: path(), Problem: fmt.Sprintf("the key %q appears more than once in one object (JSON readers disagree on which one wins); send each key once", review.PrintableLines(s))}
				}
				top.keys[s] = struct{}{}
				expectKey = false
			}
			i = end
		}
	}
	return nil
}

// scanString reads the string starting at data[i] (a quote) of a valid
// JSON document, returning the index of its closing quote and its value.
// It refuses an escaped UTF-16 surrogate that is not half of a pair,
// which decoders silently turn into U+FFFD.
func scanString(data []byte, i int) (int, string, error) {
	j := i + 1
	plain := true
	for ; data[j] != '"'; j++ {
		if data[j] == '\\' {
			plain = false
			j++
		}
	}
	raw := data[i+1 : j]
	if plain {
		return j, string(raw), nil
	}
	for k := 0; k < len(raw); k++ {
		if raw[k] != '\\' {
			continue
		}
		k++
		if raw[k] != 'u' {
			continue
		}
		r, _ := strconv.ParseUint(string(raw[k+1:k+5]), 16, 32)
		k += 4
		switch {
		case r >= 0xD800 && r < 0xDC00:
			// raw[k] is the last hex digit; a low half must follow.
			if k+7 <= len(raw) && raw[k+1] == '\\' && raw[k+2] == 'u' {
				lo, err := strconv.ParseUint(string(raw[k+3:k+7]), 16, 32)
				if err == nil && lo >= 0xDC00 && lo < 0xE000 {
					k += 6
					continue
				}
			}
			return 0, "", fmt.Errorf("holds the escape \\u%04x, half of a UTF-16 surrogate pair without its other half (not a character)", r)
		case r >= 0xDC00 && r < 0xE000:
			return 0, "", fmt.Errorf("holds the escape \\u%04x, half of a UTF-16 surrogate pair without its other half (not a character)", r)
		}
	}
	var s string
	if err := json.Unmarshal(data[i:j+1], &s); err != nil {
		return 0, "", fmt.Errorf("cannot be read: %v", err)
	}
	return j, s, nil
}

// CanonicalArguments checks the arguments of a tool call and returns
// their canonical encoding: compact JSON, object keys sorted, strings
// unescaped but for what JSON requires, numbers exactly as sent. That
// encoding is what an approver is shown and what the plugin's server
// receives. Empty arguments are {}. Arguments that are not a JSON object,
// or are ambiguous (ErrAmbiguousArguments), are refused.
func CanonicalArguments(raw json.RawMessage) (json.RawMessage, error) {
	out, _, err := canonicalArguments(raw)
	return out, err
}

// canonicalArguments is CanonicalArguments, also returning the decoded
// document (numbers as json.Number), so a caller needs no second decode.
func canonicalArguments(raw json.RawMessage) (json.RawMessage, any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), map[string]any{}, nil
	}
	if !json.Valid(raw) {
		return nil, nil, &ArgumentError{Problem: "the arguments are not well-formed JSON"}
	}
	if raw[0] != '{' {
		return nil, nil, &ArgumentError{Problem: "the arguments are not a JSON object (like {\"text\": \"hi\"})"}
	}
	if err := checkStrict(raw, MaxArgumentDepth, ""); err != nil {
		return nil, nil, err
	}
	return canonicalJSONValue(raw)
}

// canonicalJSONValue re-encodes a document checkStrict accepted, and
// returns it decoded too.
func canonicalJSONValue(raw []byte) (json.RawMessage, any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, &ArgumentError{Problem: "the arguments cannot be read: " + err.Error()}
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(raw)))
	encodeCanonical(buf, v)
	return buf.Bytes(), v, nil
}

// encodeCanonical writes v compactly: object keys sorted (by code point),
// numbers exactly as sent, and in strings every character that does not
// print (controls, DEL, bidirectional overrides, other format characters)
// escaped as \uXXXX, so the encoding shows on a terminal as it is.
func encodeCanonical(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeString(b, k)
			b.WriteByte(':')
			encodeCanonical(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeCanonical(b, e)
		}
		b.WriteByte(']')
	case string:
		encodeString(b, x)
	case json.Number:
		b.WriteString(string(x))
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case nil:
		b.WriteString("null")
	}
}

func encodeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || (unicode.IsPrint(r) && r != 0x7f):
			b.WriteRune(r)
		case r > 0xFFFF:
			hi, lo := utf16.EncodeRune(r)
			fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

// maxFormArgs is how many bytes of pretty-printed arguments an approval
// form shows whole; longer arguments are summarized key by key.
const maxFormArgs = 4000

// maxInlineValue is how long a value may be to be shown in a summary.
const maxInlineValue = 80

// ShowArguments is the text of canonical arguments an approver reads:
// pretty-printed, with control and invisible characters escaped. When that
// is longer than limit bytes it is a summary instead: every top-level key
// with the size of its value (short values shown), and the command that
// shows all (berth approvals --full ID; "" names no ID yet). whole
// reports whether the text shows the arguments whole.
func ShowArguments(canonical json.RawMessage, limit int, id string) (text string, whole bool) {
	full := PrettyArguments(canonical)
	if len(full) <= limit {
		return full, true
	}
	var m map[string]json.RawMessage
	_ = json.Unmarshal(canonical, &m)
	keys := make([]string, 0, len(m))
	width := 0
	for k := range m {
		keys = append(keys, k)
		width = max(width, len(review.PrintableLines(k)))
	}
	sort.Strings(keys)
	var b strings.Builder
	see := "berth approvals --full ID"
	if id != "" {
		see = "berth approvals --full " + id
	}
	fmt.Fprintf(&b, "(%d bytes, too long to show here: every key with the size of its value; run `%s` to see all of it)\n", len(canonical), see)
	for _, k := range keys {
		v := m[k]
		kind := map[byte]string{'{': "object", '[': "array", '"': "string"}[v[0]]
		if kind == "" {
			kind = "value"
		}
		line := fmt.Sprintf("  %-*s  %s, %d bytes", width, review.PrintableLines(k), kind, len(v))
		if len(v) <= maxInlineValue {
			line += ": " + review.PrintableLines(string(v))
		} else {
			line += " (not shown)"
		}
		b.WriteString(line + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n"), false
}

// PrettyArguments is the whole of canonical arguments, indented, with
// control and invisible characters escaped.
func PrettyArguments(canonical json.RawMessage) string {
	if len(canonical) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, canonical, "", "  "); err != nil {
		buf.Reset()
		buf.Write(canonical)
	}
	return strings.TrimSuffix(review.PrintableLines(buf.String()), "\n")
}

// maxMessageDepth bounds a whole JSON-RPC message: the envelope, params
// and MaxArgumentDepth levels of arguments.
const maxMessageDepth = MaxArgumentDepth + 2

// checkBody checks an HTTP request body of JSON-RPC messages (one, or a
// batch) before go-sdk decodes it, for ambiguity at any depth (see
// checkStrict). It returns the IDs of the requests in it, for an error
// response, and whether it is a batch.
func checkBody(body []byte) (ids []jsonrpc.ID, err error) {
	body = bytes.TrimSpace(body)
	if !json.Valid(body) {
		return nil, nil // go-sdk answers malformed JSON itself
	}
	var msgs []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &msgs); err != nil {
			return nil, nil
		}
	} else {
		msgs = []json.RawMessage{body}
	}
	for _, m := range msgs {
		var env map[string]json.RawMessage
		if json.Unmarshal(m, &env) != nil {
			continue
		}
		if rawID, ok := env["id"]; ok {
			var id any
			if json.Unmarshal(rawID, &id) == nil {
				if jid, err := jsonrpc.MakeID(id); err == nil && id != nil {
					ids = append(ids, jid)
				}
			}
		}
	}
	for i, m := range msgs {
		prefix := ""
		if len(msgs) > 1 || body[0] == '[' {
			prefix = fmt.Sprintf("[%d]", i)
		}
		if err := checkStrictAt(m, maxMessageDepth, 2, prefix); err != nil {
			return ids, err
		}
	}
	return ids, nil
}

// refusedParams is the JSON-RPC error of a request refused for ambiguous
// params.
func refusedParams(method string, err error) *jsonrpc.Error {
	what := "request"
	if method != "" {
		what = method + " request"
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("berth refused this %s: %v", what, err)}
}

// checkedTransport checks every request's params as they arrive, before
// go-sdk decodes them (see checkStrict); a request with ambiguous params
// is answered with an error and goes no further.
type checkedTransport struct {
	mcp.Transport
	log func(method string, err error)
}

func (t *checkedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &checkedConn{Connection: c, log: t.log}, nil
}

// SupportsProtocolVersion passes on what the wrapped transport supports.
func (t *checkedTransport) SupportsProtocolVersion(v string) bool {
	if pvs, ok := t.Transport.(mcp.ProtocolVersionSupporter); ok {
		return pvs.SupportsProtocolVersion(v)
	}
	return true
}

type checkedConn struct {
	mcp.Connection
	log func(method string, err error)
}

// Write implements mcp.Connection: a request berth sends to the client
// under a span of its own (sendingTelemetry) gets its JSON-RPC ID on that
// span, which go-sdk assigns below its middleware.
func (c *checkedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		mcpotel.NoteRequestID(ctx, req.ID)
	}
	return c.Connection.Write(ctx, msg)
}

func (c *checkedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok || len(req.Params) == 0 {
			return msg, nil
		}
		var perr error
		if !json.Valid(req.Params) {
			perr = &ArgumentError{Path: "params", Problem: "the params are not well-formed JSON"}
		} else {
			perr = checkStrictAt(req.Params, maxMessageDepth-1, 1, "params")
		}
		if perr == nil {
			return msg, nil
		}
		c.log(req.Method, perr)
		if req.IsCall() {
			if werr := c.Connection.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: refusedParams(req.Method, perr)}); werr != nil {
				return nil, werr
			}
		}
	}
}
