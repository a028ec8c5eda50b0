package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/berth-mcp/berth/nativetool"
)

const (
	// maxInput bounds the JSON files the format tools read.
	maxInput = 8 << 20
	// maxOutput bounds the formatted text, well under the protocol limit.
	maxOutput = 12 << 20
)

const pathSchema = `{
	"type": "string",
	"description": "File path relative to the workspace root, with / separators. Absolute paths, \"..\" and symbolic links that lead outside the workspace are refused."
}`

const indentSchema = `{
	"type": "integer",
	"minimum": 0,
	"maximum": 8,
	"default": 2,
	"description": "Spaces per indentation level; 0 gives the compact form."
}`

func (w *workspace) tools() []nativetool.Tool {
	closed := nativetool.Bool(false) // no network, no world outside the workspace
	return []nativetool.Tool{
		{
			Name:        "format_json",
			Description: "Read a JSON file in the workspace and return it pretty-printed. The file is not changed.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":` + pathSchema + `,"indent":` + indentSchema + `},"required":["path"],"additionalProperties":false}`),
			Annotations: &nativetool.Annotations{Title: "Format JSON", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
			Handler:     w.formatJSON,
		},
		{
			Name:        "format_json_in_place",
			Description: "Pretty-print a JSON file in the workspace and write it back in place. The file is left untouched if it is not valid JSON or already formatted.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":` + pathSchema + `,"indent":` + indentSchema + `},"required":["path"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"changed":{"type":"boolean"},"bytes":{"type":"integer"}},` +
				`"required":["path","changed","bytes"]}`),
			Annotations: &nativetool.Annotations{Title: "Format JSON in place", DestructiveHint: nativetool.Bool(true), IdempotentHint: true, OpenWorldHint: closed},
			Handler:     w.formatJSONInPlace,
		},
		{
			Name:        "hash_file",
			Description: "Return the SHA-256 (hex) and size in bytes of a file in the workspace.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":` + pathSchema + `},"required":["path"],"additionalProperties":false}`),
			OutputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"sha256":{"type":"string"},"size":{"type":"integer"}},` +
				`"required":["path","sha256","size"]}`),
			Annotations: &nativetool.Annotations{Title: "Hash file", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: closed},
			Handler:     w.hashFile,
		},
	}
}

type formatArgs struct {
	Path   string `json:"path"`
	Indent *int   `json:"indent"`
}

func (a *formatArgs) indent() (string, error) {
	if a.Indent == nil {
		return "  ", nil
	}
	if *a.Indent < 0 || *a.Indent > 8 {
		return "", fmt.Errorf(`"indent" is %d; it must be 0 to 8`, *a.Indent)
	}
	return string(bytes.Repeat([]byte{' '}, *a.Indent)), nil
}

func (w *workspace) formatJSON(ctx context.Context, args json.RawMessage) (*nativetool.Result, error) {
	var a formatArgs
	if err := nativetool.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	_, out, _, err := w.format(&a)
	if err != nil {
		return nil, err
	}
	return nativetool.Text(string(out)), nil
}

type formatResult struct {
	Path    string `json:"path"`
	Changed bool   `json:"changed"`
	Bytes   int    `json:"bytes"`
}

func (w *workspace) formatJSONInPlace(ctx context.Context, args json.RawMessage) (*nativetool.Result, error) {
	var a formatArgs
	if err := nativetool.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	rel, out, in, err := w.format(&a)
	if err != nil {
		return nil, err
	}
	res := formatResult{Path: filepath.ToSlash(rel), Bytes: len(out)}
	if !bytes.Equal(in, out) {
		if err := w.replace(rel, out); err != nil {
			return nil, err
		}
		res.Changed = true
		nativetool.Logger(ctx).Info("formatted a file in place", "path", res.Path, "bytes", res.Bytes)
	}
	r := nativetool.Structured(res)
	if res.Changed {
		r.Content = append(r.Content, nativetool.TextContent(fmt.Sprintf("%s formatted (%d bytes)", res.Path, res.Bytes)))
	} else {
		r.Content = append(r.Content, nativetool.TextContent(fmt.Sprintf("%s was already formatted; not written", res.Path)))
	}
	return r, nil
}

// format reads the file named by a and returns its resolved relative
// path, the formatted text (with a final newline) and the original bytes.
func (w *workspace) format(a *formatArgs) (rel string, out, in []byte, err error) {
	indent, err := a.indent()
	if err != nil {
		return "", nil, nil, err
	}
	rel, err = w.resolve(a.Path)
	if err != nil {
		return "", nil, nil, err
	}
	in, err = w.readFile(rel, maxInput)
	if err != nil {
		return "", nil, nil, err
	}
	if !json.Valid(in) {
		var v any
		err := json.Unmarshal(in, &v)
		return "", nil, nil, fmt.Errorf("%s is not valid JSON: %v", filepath.ToSlash(rel), err)
	}
	trimmed := bytes.TrimRight(in, " \t\r\n") // json.Indent keeps trailing space
	var buf bytes.Buffer
	if indent == "" {
		err = json.Compact(&buf, trimmed)
	} else {
		// Each line break adds at most 1+depth*indent bytes; refuse what
		// would grow past the limit before allocating it.
		breaks, depth := shape(trimmed)
		if int64(len(trimmed))+int64(breaks)*int64(1+depth*len(indent)) > maxOutput {
			return "", nil, nil, fmt.Errorf("%s is nested too deeply to pretty-print within %d MiB; use a smaller indent", filepath.ToSlash(rel), maxOutput>>20)
		}
		err = json.Indent(&buf, trimmed, "", indent)
	}
	if err != nil {
		return "", nil, nil, fmt.Errorf("%s: %v", filepath.ToSlash(rel), err)
	}
	buf.WriteByte('\n')
	return rel, buf.Bytes(), in, nil
}

// shape returns an upper bound on the line breaks json.Indent inserts into
// the valid JSON document b, and its maximum nesting depth.
func shape(b []byte) (breaks, depth int) {
	inString, escaped, d := false, false, 0
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			d++
			depth = max(depth, d)
			breaks++
		case '}', ']':
			d--
			breaks++
		case ',':
			breaks++
		}
	}
	return breaks, depth
}

// readFile reads a regular file of at most limit bytes through the
// workspace root.
func (w *workspace) readFile(rel string, limit int64) ([]byte, error) {
	f, err := w.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d MiB", filepath.ToSlash(rel), limit>>20)
	}
	return b, nil
}

// open opens a regular file through the workspace root.
func (w *workspace) open(rel string) (*os.File, error) {
	root, err := w.openRoot()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.ToSlash(rel))
	}
	f, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	return f, nil
}

// replace writes data to rel atomically (temporary file in the same
// directory, then rename), keeping the file's permission bits.
func (w *workspace) replace(rel string, data []byte) (err error) {
	root, err := w.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return fmt.Errorf("%s: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".fmttools-"+hex.EncodeToString(suffix[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return fmt.Errorf("%s: cannot write beside it: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		return fmt.Errorf("%s: writing: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	return nil
}

type hashResult struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

func (w *workspace) hashFile(ctx context.Context, args json.RawMessage) (*nativetool.Result, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := nativetool.DecodeArgs(args, &a); err != nil {
		return nil, err
	}
	rel, err := w.resolve(a.Path)
	if err != nil {
		return nil, err
	}
	f, err := w.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, &ctxReader{ctx: ctx, r: f})
	if err != nil {
		return nil, fmt.Errorf("%s: %v", filepath.ToSlash(rel), unwrapPath(err))
	}
	return nativetool.Structured(hashResult{Path: filepath.ToSlash(rel), SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}), nil
}

// ctxReader stops a long read when the call is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, errors.New("cancelled")
	}
	return c.r.Read(p)
}
