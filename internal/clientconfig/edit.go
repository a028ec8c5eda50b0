package clientconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/tailscale/hujson"

	"github.com/berth-mcp/berth/internal/fsx"
)

// MaxFileSize is the largest configuration file berth reads. ~/.claude.json
// holds history and grows, so the limit is generous.
const MaxFileSize = 64 << 20

// Options tunes an edit. A nil *Options means the defaults.
type Options struct {
	// Force lets connect replace a different entry of the same name, and
	// disconnect remove an entry that does not run `berth serve`.
	Force bool
	// Now stamps the backup file name; nil means time.Now.
	Now func() time.Time
	// BackupDir is where copies of the files an edit replaces are kept
	// ($BERTH_HOME/backups): not beside a file that is probably committed.
	// Apply of an edit that replaces a file panics without it.
	BackupDir string
	// Profile, for disconnect, is the profile whose entry is removed: an
	// entry of that name is removed (without Force) only when it runs
	// `berth serve … --profile Profile`, the entry connect --profile
	// writes; another entry that happens to bear the name, a plain
	// `berth serve` among them, is kept.
	Profile string
}

// Action says what an edit does to a file.
type Action string

// The actions of an edit.
const (
	Added     Action = "added"     // the entry was not there and is added
	Replaced  Action = "replaced"  // a different entry of that name is replaced (Force)
	Unchanged Action = "unchanged" // the file already holds the entry; nothing is written
	Removed   Action = "removed"   // the entry is removed
	Absent    Action = "absent"    // disconnect: no such entry (or no file); nothing is written
)

// Edit is one prepared change to one configuration file: connecting or
// disconnecting a server entry. PrepareConnect and PrepareDisconnect read
// and check the file and compute the new content; Apply writes it. An Edit
// is not safe for concurrent use.
type Edit struct {
	Target Target
	Name   string
	Action Action
	// Entry is the entry connect writes; nil for disconnect.
	Entry *Entry
	// Previous is the entry that was under Name before, as compact JSON;
	// nil when there was none.
	Previous json.RawMessage
	// Warnings are problems found in the file that berth does not fix.
	Warnings []string

	// Backup is the copy of the old file that Apply made, if any.
	Backup string
	// Written reports whether Apply replaced the file.
	Written bool

	path    string // Target.Path with symlinks resolved: the file written
	existed bool
	old     []byte // the file as read
	info    fs.FileInfo
	mode    fs.FileMode
	data    []byte // the new content; nil when there is nothing to write
	opts    Options
	applied bool
}

// PrepareConnect reads the file of t and computes the change that makes it
// hold e under name: Added, Unchanged, or (with Force) Replaced. A different
// entry of that name without Force is an ErrConflict. A file that does not
// parse is an ErrInvalidConfig (often a *SyntaxError).
func PrepareConnect(ctx context.Context, t Target, name string, e Entry, opts *Options) (*Edit, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	ed, d, err := load(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	ed.Name, ed.Entry = name, &e
	if d == nil {
		ed.Action, ed.data = Added, newDocument(t.RootKey, name, e)
		return ed, nil
	}
	c, err := d.connect(name, e, ed.opts.Force)
	if err != nil {
		return nil, err
	}
	ed.Action, ed.Previous, ed.Warnings, ed.data = c.action, c.previous, c.warnings, c.data
	return ed, nil
}

// PrepareDisconnect reads the file of t and computes the change that
// removes the entry under name, and nothing else: Removed, or Absent when
// there is no such entry or no file. An entry that does not run `berth
// serve` is an ErrConflict unless Force.
func PrepareDisconnect(ctx context.Context, t Target, name string, opts *Options) (*Edit, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	ed, d, err := load(ctx, t, opts)
	if err != nil {
		return nil, err
	}
	ed.Name, ed.Action = name, Absent
	if d == nil {
		return ed, nil
	}
	c, err := d.disconnect(name, ed.opts.Force, ed.opts.Profile)
	if err != nil {
		return nil, err
	}
	ed.Action, ed.Previous, ed.Warnings, ed.data = c.action, c.previous, c.warnings, c.data
	return ed, nil
}

// change is an edit computed in memory; data is nil when nothing changes.
type change struct {
	action   Action
	previous json.RawMessage
	warnings []string
	data     []byte
}

// connect computes the content that holds e under name.
func (d *document) connect(name string, e Entry, force bool) (change, error) {
	var c change
	t := d.t
	servers, idx, err := d.lookup(name)
	if err != nil {
		return c, err
	}
	c.warnings = d.warnings(servers)
	var ss []splice
	switch {
	case servers == nil:
		c.action = Added
		ss = d.insertMember(&d.root, t.RootKey, map[string]Entry{name: e})
	case idx < 0:
		c.action = Added
		ss = d.insertMember(servers, name, e)
	default:
		m := &servers.Value.(*hujson.Object).Members[idx]
		c.previous = compact(d.src[m.Value.StartOffset:m.Value.EndOffset])
		if sameJSON(c.previous, mustMarshal(e)) {
			c.action = Unchanged
			return c, nil
		}
		if !force {
			return c, fmt.Errorf("%s already has a server named %q that differs from the one berth writes:\n  has:   %s\n  berth: %s\n%w: nothing was changed; pass --force to replace it, or --name to connect berth under another name",
				t.Path, name, c.previous, mustMarshal(e), ErrConflict)
		}
		c.action = Replaced
		ss = []splice{d.replaceValue(servers, m, e)}
	}
	c.data = d.apply(ss)
	return c, d.verify(c.data, name, &e)
}

// disconnect computes the content without the entry name.
func (d *document) disconnect(name string, force bool, profile string) (change, error) {
	c := change{action: Absent}
	servers, idx, err := d.lookup(name)
	if err != nil {
		return c, err
	}
	c.warnings = d.warnings(servers)
	if idx < 0 {
		return c, nil
	}
	m := &servers.Value.(*hujson.Object).Members[idx]
	c.previous = compact(d.src[m.Value.StartOffset:m.Value.EndOffset])
	if !isBerthEntry(c.previous) && !force {
		return c, fmt.Errorf("server %q in %s does not run `berth serve`, so berth connect did not write it: %s\n%w: nothing was changed; pass --force to remove it anyway, or --name to pick berth's entry",
			name, d.t.Path, c.previous, ErrConflict)
	}
	if profile != "" && !force && servedProfile(c.previous) != profile {
		what := "serves the whole workspace"
		if p := servedProfile(c.previous); p != "" {
			what = fmt.Sprintf("serves profile %q", p)
		}
		return c, fmt.Errorf("server %q in %s runs `berth serve` but %s, not profile %q, so berth connect --profile %s did not write it: %s\n%w: nothing was changed; pass --force to remove it anyway, or --name to pick the profile's entry",
			name, d.t.Path, what, profile, profile, c.previous, ErrConflict)
	}
	c.action = Removed
	c.data = d.apply(d.removeMember(servers, idx))
	return c, d.verify(c.data, name, nil)
}

// isBerthEntry reports whether a server entry (JSON) looks like one berth
// connect writes: a command whose first argument is "serve", or an HTTP
// entry whose token comes from berth (NewHTTPEntry).
func isBerthEntry(raw []byte) bool {
	var e Entry
	if json.Unmarshal(raw, &e) != nil {
		return false
	}
	if e.URL != "" {
		return isBerthHTTPAuth(e)
	}
	return e.Command != "" && len(e.Args) > 0 && e.Args[0] == "serve"
}

// servedProfile is the profile a berth entry (JSON) serves: the value of
// its last --profile argument (berth's flags take the last), "" for none.
func servedProfile(raw []byte) string {
	var e struct {
		Args []string `json:"args"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return ""
	}
	p := ""
	for i, a := range e.Args {
		if v, ok := strings.CutPrefix(a, "--profile="); ok {
			p = v
		} else if a == "--profile" && i+1 < len(e.Args) {
			p = e.Args[i+1]
		}
	}
	return p
}

// load reads and parses the file of t. A missing file, or one holding only
// whitespace, gives a nil document.
func load(ctx context.Context, t Target, opts *Options) (*Edit, *document, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	ed := &Edit{Target: t, path: t.Path}
	if opts != nil {
		ed.opts = *opts
	}
	if ed.opts.Now == nil {
		ed.opts.Now = time.Now
	}
	if err := checkInWorkspace(t); err != nil {
		return nil, nil, err
	}
	if fi, err := os.Lstat(t.Path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		// A linked file (dotfiles) is edited where it lives; the link stays.
		real, err := filepath.EvalSymlinks(t.Path)
		if err != nil {
			return nil, nil, fmt.Errorf("%s is a symbolic link that cannot be followed: %w; fix or remove the link", t.Path, err)
		}
		ed.path = real
	}
	// OpenRegular never blocks on a FIFO the workspace planted there, and
	// refuses it (or a device, a socket, a directory) at once.
	f, err := fsx.OpenRegular(ed.path)
	if errors.Is(err, fs.ErrNotExist) {
		return ed, nil, nil
	}
	if nr := (*fsx.NotRegularError)(nil); errors.As(err, &nr) {
		return nil, nil, notRegular(t.Path, nr)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", t.Path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", t.Path, err)
	}
	data, err := fsx.ReadAll(f, t.Path, MaxFileSize)
	if tl := (*fsx.TooLargeError)(nil); errors.As(err, &tl) {
		return nil, nil, fmt.Errorf("%s is larger than %d MiB; berth does not edit it: add the entry by hand", t.Path, MaxFileSize>>20)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("cannot read %s: %w", t.Path, err)
	}
	ed.existed, ed.old, ed.info, ed.mode = true, data, fi, fi.Mode().Perm()
	d, err := parse(t, data)
	if err != nil {
		return nil, nil, err
	}
	return ed, d, nil
}

// notRegular is the error for a client's file that is not a regular file
// (nr, of the file at path, or the one its link leads to).
func notRegular(path string, nr *fsx.NotRegularError) error {
	return fmt.Errorf("%s is %s, not a regular file (rule %s); berth edits only regular files: remove it (or move it aside) and run berth again", path, nr.Kind(), fsx.RuleSpecialFile)
}

// checkInWorkspace refuses a project file (t.Workspace set) when a
// component of its path below the workspace — the folder (.vscode,
// .cursor) or the file itself — is a symbolic link that leads out of the
// workspace or cannot be followed. A link that stays inside is followed;
// a user's file is not checked.
func checkInWorkspace(t Target) error {
	if t.User || t.Workspace == "" {
		return nil
	}
	ws := filepath.Clean(t.Workspace)
	rel, err := filepath.Rel(ws, t.Path)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%s is not inside the workspace %s: %w", t.Path, ws, ErrOutsideWorkspace)
	}
	realWS, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return fmt.Errorf("cannot resolve the workspace %s: %w", ws, err)
	}
	p := ws
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // berth creates the rest as plain folders and a file
		}
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", p, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		dest, _ := os.Readlink(p)
		real, err := filepath.EvalSymlinks(p)
		if err == nil && within(realWS, real) {
			continue
		}
		where := "which is outside the workspace " + ws
		if err != nil {
			where = "which cannot be followed (" + unwrapPathError(err).Error() + ")"
		}
		return fmt.Errorf("cannot write %s: %s is a symbolic link to %q, %s: %w; berth follows no link of a workspace out of it, since the workspace could make berth write any file you can write. Remove the link (rm %s) and run berth again, or connect the user's configuration with --user",
			t.Path, p, dest, where, ErrOutsideWorkspace, p)
	}
	return nil
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// within reports whether path is dir or inside it (both clean and
// absolute).
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

var utf8BOM = []byte("\xef\xbb\xbf")

// document is a parsed configuration file. Edits are splices of its
// source: bytes outside a splice are kept exactly.
type document struct {
	t    Target
	bom  bool
	src  []byte // the file without its byte order mark
	root hujson.Value
	unit string // one level of indentation
	nl   string // "\n" or "\r\n"
}

// parse parses a configuration file; nil means it holds only whitespace.
func parse(t Target, data []byte) (*document, error) {
	d := &document{t: t, src: data, nl: "\n"}
	if bytes.HasPrefix(data, utf8BOM) {
		d.bom, d.src = true, data[len(utf8BOM):]
	}
	if len(bytes.TrimSpace(d.src)) == 0 {
		return nil, nil
	}
	if !t.JSONC {
		if err := checkStrict(t, d.src); err != nil {
			return nil, err
		}
	}
	root, err := hujson.Parse(d.src)
	if err != nil {
		return nil, hujsonError(t, err)
	}
	d.root = root
	if _, ok := root.Value.(*hujson.Object); !ok {
		return nil, invalidf(t.Path, fmt.Sprintf("make the file a JSON object, like {%q: {}}", t.RootKey),
			"the top level is not a JSON object")
	}
	if bytes.Contains(d.src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	d.unit = d.indentUnit()
	return d, nil
}

// checkStrict reports where data is not strict JSON.
func checkStrict(t Target, data []byte) error {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineColumn(data, int(se.Offset)-1)
		return &SyntaxError{File: t.Path, Line: line, Column: col, Detail: se.Error(), Client: t.Client}
	}
	if err != nil {
		return &SyntaxError{File: t.Path, Line: 1, Column: 1, Detail: err.Error(), Client: t.Client}
	}
	return nil
}

// hujsonError turns the parser's "hujson: line L, column C: detail" into a
// SyntaxError.
func hujsonError(t Target, err error) error {
	se := &SyntaxError{File: t.Path, Line: 1, Column: 1, Detail: err.Error(), Client: t.Client, JSONC: t.JSONC}
	msg := strings.TrimPrefix(err.Error(), "hujson: ")
	if n, _ := fmt.Sscanf(msg, "line %d, column %d:", &se.Line, &se.Column); n == 2 {
		if i := strings.Index(msg, ": "); i >= 0 {
			se.Detail = msg[i+2:]
		}
	}
	return se
}

func lineColumn(b []byte, off int) (line, col int) {
	off = max(0, min(off, len(b)))
	line = 1 + bytes.Count(b[:off], []byte("\n"))
	col = 1 + off - (bytes.LastIndexByte(b[:off], '\n') + 1)
	return line, col
}

// lookup finds the servers object and the member name in it. servers is
// nil when the root key is absent; idx is -1 when name is absent.
func (d *document) lookup(name string) (servers *hujson.Value, idx int, err error) {
	root := d.root.Value.(*hujson.Object)
	rk := d.t.RootKey
	ri := members(root, rk)
	switch {
	case len(ri) == 0:
		return nil, -1, nil
	case len(ri) > 1:
		return nil, -1, invalidf(d.t.Path, fmt.Sprintf("merge them into one %q object", rk), "the key %q appears %d times", rk, len(ri))
	}
	servers = &root.Members[ri[0]].Value
	obj, ok := servers.Value.(*hujson.Object)
	if !ok {
		line, col := lineColumn(d.src, servers.StartOffset)
		return nil, -1, invalidf(d.t.Path, fmt.Sprintf("make %q an object of servers, like %q: {}", rk, rk),
			"line %d, column %d: %q is not a JSON object", line, col, rk)
	}
	si := members(obj, name)
	switch len(si) {
	case 0:
		return servers, -1, nil
	case 1:
		return servers, si[0], nil
	}
	return nil, -1, invalidf(d.t.Path, "keep one of them", "the server %q appears %d times under %q", name, len(si), rk)
}

func members(obj *hujson.Object, name string) []int {
	var out []int
	for i, m := range obj.Members {
		if lit, ok := m.Name.Value.(hujson.Literal); ok && lit.String() == name {
			out = append(out, i)
		}
	}
	return out
}

// warnings reports entries the client cannot use and berth leaves alone.
func (d *document) warnings(servers *hujson.Value) []string {
	if d.t.Client != ClaudeDesktop || servers == nil {
		return nil
	}
	var out []string
	for _, m := range servers.Value.(*hujson.Object).Members {
		var e struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		}
		if json.Unmarshal(compact(d.src[m.Value.StartOffset:m.Value.EndOffset]), &e) != nil {
			continue
		}
		if e.URL != "" || (e.Type != "" && e.Type != "stdio") {
			out = append(out, fmt.Sprintf("server %q is a remote (url) entry: Claude Desktop's config file supports stdio servers only, and such entries have been reported to make the app reset the file; add remote servers under Settings > Connectors instead",
				m.Name.Value.(hujson.Literal).String()))
		}
	}
	return out
}

// splice replaces src[start:end] with text.
type splice struct {
	start, end int
	text       string
}

// apply returns the new file content: the splices applied to the source,
// the byte order mark kept.
func (d *document) apply(ss []splice) []byte {
	sort.Slice(ss, func(i, j int) bool { return ss[i].start < ss[j].start })
	var b bytes.Buffer
	if d.bom {
		b.Write(utf8BOM)
	}
	pos := 0
	for _, s := range ss {
		b.Write(d.src[pos:s.start])
		b.WriteString(s.text)
		pos = s.end
	}
	b.Write(d.src[pos:])
	return b.Bytes()
}

// insertMember adds "key": val as the last member of the object v, in the
// object's style: one member per line with its indentation, or inline, with
// or without a trailing comma. Comments stay where they are.
func (d *document) insertMember(v *hujson.Value, key string, val any) []splice {
	obj := v.Value.(*hujson.Object)
	open, closing := v.StartOffset, v.EndOffset-1
	base := lineIndent(d.src, open)
	inner := base + d.unit
	member := func(indent string, multiline bool) string {
		return quote(key) + ": " + d.render(val, indent, multiline)
	}
	after := obj.AfterExtra // between the last member (or '{') and '}'
	nlAt := bytes.LastIndexByte(after, '\n')
	if len(obj.Members) == 0 {
		switch {
		case isSpace(after) && d.minified():
			return []splice{{open, closing + 1, "{" + member("", false) + "}"}}
		case isSpace(after):
			return []splice{{open, closing + 1, "{" + d.nl + inner + member(inner, true) + d.nl + base + "}"}}
		case nlAt >= 0:
			p := closing - len(after) + nlAt + 1
			return []splice{{p, p, inner + member(inner, true) + d.nl}}
		default:
			return []splice{{closing, closing, " " + member("", false) + " "}}
		}
	}
	last := &obj.Members[len(obj.Members)-1]
	trailingComma := last.Value.AfterExtra != nil
	if nlAt >= 0 {
		indent := inner
		if !sameLine(d.src, open, last.Name.StartOffset) {
			indent = lineIndent(d.src, last.Name.StartOffset)
		}
		p := closing - len(after) + nlAt + 1
		text := indent + member(indent, true)
		if trailingComma {
			text += ","
		}
		ss := []splice{{p, p, text + d.nl}}
		if !trailingComma {
			ss = append(ss, splice{last.Value.EndOffset, last.Value.EndOffset, ","})
		}
		return ss
	}
	if trailingComma {
		return []splice{{closing, closing, " " + member("", false) + ","}}
	}
	return []splice{{last.Value.EndOffset, last.Value.EndOffset, ", " + member("", false)}}
}

// minified reports a file with content written on one line; a bare {}
// is not one.
func (d *document) minified() bool {
	return len(d.root.Value.(*hujson.Object).Members) > 0 &&
		!bytes.Contains(bytes.TrimRight(d.src, " \t\r\n"), []byte("\n"))
}

// replaceValue replaces the value of member m of the object v.
func (d *document) replaceValue(v *hujson.Value, m *hujson.ObjectMember, val any) splice {
	multiline := bytes.IndexByte(d.src[v.StartOffset:v.EndOffset], '\n') >= 0
	return splice{m.Value.StartOffset, m.Value.EndOffset, d.render(val, lineIndent(d.src, m.Name.StartOffset), multiline)}
}

// removeMember removes member i of the object v with its comma, and its
// line when it stands alone on it. Comments around it stay.
func (d *document) removeMember(v *hujson.Value, i int) []splice {
	obj := v.Value.(*hujson.Object)
	n := len(obj.Members)
	m := obj.Members[i]
	if n == 1 && isSpace(m.Name.BeforeExtra) && isSpace(m.Name.AfterExtra) && isSpace(m.Value.BeforeExtra) &&
		isSpace(m.Value.AfterExtra) && isSpace(obj.AfterExtra) {
		return []splice{{v.StartOffset, v.EndOffset, "{}"}}
	}
	start, end := m.Name.StartOffset, m.Value.EndOffset
	hasComma := i < n-1 || m.Value.AfterExtra != nil
	if hasComma {
		end += len(m.Value.AfterExtra) + 1
	} else if i > 0 {
		// The last member: its predecessor's comma goes with it.
		prev := obj.Members[i-1].Value
		comma := prev.EndOffset + len(prev.AfterExtra)
		if isSpace(m.Name.BeforeExtra) {
			return []splice{{comma, end, ""}}
		}
		ss := d.wholeLines(start, end)
		return append(ss, splice{comma, comma + 1, ""})
	}
	return d.wholeLines(start, end)
}

// wholeLines deletes src[start:end], widened to whole lines when nothing
// else is on them, or else to the blanks that follow.
func (d *document) wholeLines(start, end int) []splice {
	ls := bytes.LastIndexByte(d.src[:start], '\n') + 1
	le := end
	for le < len(d.src) && (d.src[le] == ' ' || d.src[le] == '\t' || d.src[le] == '\r') {
		le++
	}
	if isSpace(d.src[ls:start]) && le < len(d.src) && d.src[le] == '\n' {
		return []splice{{ls, le + 1, ""}}
	}
	for end < len(d.src) && (d.src[end] == ' ' || d.src[end] == '\t') {
		end++
	}
	return []splice{{start, end, ""}}
}

// render writes val as JSON: indented at indent, or on one line.
func (d *document) render(val any, indent string, multiline bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if multiline {
		enc.SetIndent(indent, d.unit)
	}
	if err := enc.Encode(val); err != nil {
		panic(fmt.Sprintf("clientconfig: cannot encode %T: %v", val, err))
	}
	s := strings.TrimSuffix(b.String(), "\n")
	if !multiline {
		return s
	}
	return strings.ReplaceAll(s, "\n", d.nl)
}

// indentUnit guesses one level of indentation from the root's first
// member; two spaces when the file does not say.
func (d *document) indentUnit() string {
	root := d.root.Value.(*hujson.Object)
	if len(root.Members) > 0 {
		open, first := d.root.StartOffset, root.Members[0].Name.StartOffset
		if !sameLine(d.src, open, first) {
			if u := strings.TrimPrefix(lineIndent(d.src, first), lineIndent(d.src, open)); u != "" {
				return u
			}
		}
	}
	return "  "
}

// errBug marks an edit that verify caught changing more than it should.
var errBug = errors.New("internal error")

// verify parses the new content and checks that it differs from the old
// only in the entry name: everything else decodes to the same values, and
// the entry is want (or gone when want is nil).
func (d *document) verify(data []byte, name string, want *Entry) error {
	fail := func(what string, args ...any) error {
		return fmt.Errorf("%w: berth would not write %s: the edited file %s; nothing was changed (please report this, and add the entry by hand meanwhile)",
			errBug, d.t.Path, fmt.Sprintf(what, args...))
	}
	src := bytes.TrimPrefix(data, utf8BOM)
	if !d.t.JSONC && !json.Valid(src) {
		return fail("is not valid JSON")
	}
	newV, err := decodeJSONC(src)
	if err != nil {
		return fail("does not parse: %v", err)
	}
	oldV, err := decodeJSONC(d.src)
	if err != nil {
		return fail("cannot be compared: %v", err)
	}
	oldRoot, ok1 := oldV.(map[string]any)
	newRoot, ok2 := newV.(map[string]any)
	if !ok1 || !ok2 {
		return fail("has no top-level object")
	}
	rk := d.t.RootKey
	oldServers, _ := oldRoot[rk].(map[string]any)
	newServers, ok := newRoot[rk].(map[string]any)
	if !ok {
		return fail("has no %q object", rk)
	}
	got, has := newServers[name]
	switch {
	case want == nil && has:
		return fail("still holds %q", name)
	case want != nil && !has:
		return fail("does not hold %q", name)
	case want != nil:
		w, _ := decodeJSONC(mustMarshal(*want))
		if !reflect.DeepEqual(got, w) {
			return fail("holds a different %q", name)
		}
	}
	delete(oldRoot, rk)
	delete(newRoot, rk)
	if !reflect.DeepEqual(oldRoot, newRoot) {
		return fail("would change keys other than %q", rk)
	}
	oldRest, newRest := maps(oldServers), maps(newServers)
	delete(oldRest, name)
	delete(newRest, name)
	if !reflect.DeepEqual(oldRest, newRest) {
		return fail("would change servers other than %q", name)
	}
	return nil
}

func maps(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// decodeJSONC decodes JSON with comments into maps, slices and json.Number.
func decodeJSONC(src []byte) (any, error) {
	v, err := hujson.Parse(bytes.Clone(src)) // Standardize writes into the buffer
	if err != nil {
		return nil, err
	}
	v.Standardize()
	dec := json.NewDecoder(bytes.NewReader(v.Pack()))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

// newDocument is the content of a new file holding one entry.
func newDocument(rootKey, name string, e Entry) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(map[string]map[string]Entry{rootKey: {name: e}}); err != nil {
		panic(fmt.Sprintf("clientconfig: cannot encode an entry: %v", err))
	}
	return b.Bytes()
}

func mustMarshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("clientconfig: cannot encode %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// compact returns a value of the file (which may hold comments) as compact
// standard JSON.
func compact(raw []byte) json.RawMessage {
	v, err := hujson.Parse(bytes.Clone(raw))
	if err != nil {
		return json.RawMessage(bytes.Clone(raw))
	}
	v.Minimize()
	return json.RawMessage(v.Pack())
}

// sameJSON reports whether two JSON texts decode to the same value.
func sameJSON(a, b []byte) bool {
	x, err1 := decodeJSONC(a)
	y, err2 := decodeJSONC(b)
	return err1 == nil && err2 == nil && reflect.DeepEqual(x, y)
}

func quote(s string) string {
	return string(mustMarshal(s))
}

func isSpace(b []byte) bool {
	return len(bytes.Trim(b, " \t\r\n")) == 0
}

func lineIndent(src []byte, off int) string {
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	i := ls
	for i < len(src) && (src[i] == ' ' || src[i] == '\t') {
		i++
	}
	return string(src[ls:i])
}

func sameLine(src []byte, a, b int) bool {
	return bytes.IndexByte(src[min(a, b):max(a, b)], '\n') < 0
}
