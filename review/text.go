package review

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berth-mcp/berth/fetched"
)

// Line is one line of a disclosure as berth review words it. WriteText
// prints the lines for a terminal; another rendering (the marketplace's
// web page) shows the same lines, so the words are written once.
type Line struct {
	Kind LineKind
	// Label is a field's label; "" continues the field above.
	Label string
	// Text is the line's text, unescaped: it carries text from the bundle,
	// so escape it for where it is shown (Printable for a terminal).
	Text string
}

// LineKind says what a Line is.
type LineKind int

// Kinds of lines, as WriteText prints them.
const (
	LineTitle       LineKind = iota // the name and version
	LineDescription                 // the description, indented
	LineBlank                       // an empty line between groups
	LineHeading                     // a sentence that opens a group, like "If you trust it, it may:"
	LineItem                        // one thing it may do, printed "- " + Text; fields follow
	LineField                       // a labelled value, printed indented
)

// WriteText writes the disclosure for a person at a terminal.
func (d *Disclosure) WriteText(w io.Writer) error {
	for _, l := range d.Lines() {
		var err error
		switch l.Kind {
		case LineTitle, LineHeading:
			_, err = fmt.Fprintf(w, "%s\n", Printable(l.Text))
		case LineDescription:
			_, err = fmt.Fprintf(w, "  %s\n", Printable(l.Text))
		case LineBlank:
			_, err = fmt.Fprintln(w)
		case LineItem:
			_, err = fmt.Fprintf(w, "%s\n", Printable("- "+l.Text))
		case LineField:
			_, err = fmt.Fprintf(w, "    %-12s %s\n", l.Label, Printable(l.Text))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Lines returns the disclosure as the lines WriteText prints.
func (d *Disclosure) Lines() []Line {
	p := &printer{}
	p.line(LineTitle, d.Name+" "+d.Version)
	p.line(LineDescription, d.Description)
	p.blank()
	if d.Publisher != nil {
		pub := d.Publisher.Name
		if d.Publisher.URL != "" {
			pub += " <" + d.Publisher.URL + ">"
		}
		p.field("publisher", pub+" (as the manifest claims; only a signature proves who signed it)")
	}
	if d.License != "" {
		p.field("license", d.License)
	}
	if d.Homepage != "" {
		p.field("homepage", d.Homepage)
	}
	if d.Requires != "" {
		p.field("requires", "berth "+d.Requires)
	}
	p.field("digest", d.Digest)
	p.field("files", fmt.Sprintf("%d, %s in all", d.Files.Count, humanBytes(d.Files.TotalSize)))
	p.importHead(d)
	p.blank()
	if len(d.Servers) == 0 && len(d.NativeTools) == 0 {
		p.line(LineHeading, "It asks for nothing.")
		p.importTail(d)
		return p.lines
	}
	p.line(LineHeading, "If you trust it, it may:")
	for _, s := range d.Servers {
		p.blank()
		switch s.Kind {
		case KindStdio:
			p.stdio(s)
		case KindRemote:
			p.remote(s)
		}
		p.tools(s.Tools)
		p.field("timeouts", "startup "+s.Timeouts.Startup+", each call "+s.Timeouts.Call)
	}
	for _, nt := range d.NativeTools {
		p.blank()
		p.line(LineItem, fmt.Sprintf("run the native tool provider %q (go-plugin over gRPC)", nt.Name))
		p.sandbox(nt.Sandbox, "the bundle")
		p.field("program", nt.Executable+" (bundled, sha256 "+nt.SHA256+", "+humanBytes(nt.Size)+")")
		p.field("checked", "berth starts it only if its checksum still matches the reviewed one")
	}
	p.importTail(d)
	return p.lines
}

func (p *printer) stdio(s Server) {
	st := s.Stdio
	title := fmt.Sprintf("run the local MCP server %q", s.Name)
	if s.Description != "" {
		title += " (" + s.Description + ")"
	}
	p.line(LineItem, title)
	p.sandbox(st.Sandbox, runtimeWords(st))
	switch st.Program {
	case ProgramBundled:
		p.field("program", st.Command+" (bundled, sha256 "+st.SHA256+")")
	case ProgramWorkspace:
		p.field("program", st.Command+" (a program from your workspace; not part of the reviewed bundle)")
		p.field("", "the workspace is never executable under confinement: it starts only where the operator leaves it unconfined (docs/sandbox.md)")
	default:
		p.field("program", st.Command+" (a host program found on PATH; not part of the reviewed bundle)")
	}
	p.field("argv", quoteArgv(st.Argv))
	p.field("directory", st.Cwd)
	if len(st.Env) == 0 {
		p.field("environment", "only the base set (PATH, HOME, LANG, TMPDIR)")
	}
	for i, e := range st.Env {
		label := ""
		if i == 0 {
			label = "environment"
		}
		if e.Confirm {
			p.field(label, e.Name+": the value you confirm, kept as "+e.FromEnv+" in berth's config (never read from your environment)")
			continue
		}
		if e.BundlePath != nil {
			p.field(label, e.Name+" = "+bundlePathList(e.BundlePath)+" (paths of the bundle, where the server loads modules from)")
			continue
		}
		p.field(label, e.Name+" from your $"+e.FromEnv)
	}
	for _, f := range st.RuntimeFetch {
		if f.Staged {
			p.field("downloads", f.Package+" at trust (berth trust, berth install), staged; the server starts offline")
		} else {
			p.field("downloads", f.Package+" with "+f.Tool+" when it starts, and runs it")
		}
		p.field("from", registryName(f))
		p.field("dependencies", f.Dependencies)
	}
}

// registryName says where a fetched package comes from, for a person.
func registryName(f Fetch) string {
	f.Registry = fetched.RedactURL(f.Registry)
	switch f.Ecosystem {
	case "npm":
		return "the npm registry, " + f.Registry + ", unless the operator set a mirror (docs/pool.md)"
	case "jsr":
		return "JSR, " + f.Registry
	case "pypi":
		return "PyPI, " + f.Registry + ", unless the operator set a mirror (docs/pool.md)"
	case "go":
		return "the Go module proxy, " + f.Registry + ", unless the operator set GOPROXY (docs/pool.md)"
	case "oci":
		return "the container registry " + f.Registry
	}
	return f.Registry
}

func (p *printer) remote(s Server) {
	r := s.Remote
	title := fmt.Sprintf("connect to the remote MCP server %q", s.Name)
	if s.Description != "" {
		title += " (" + s.Description + ")"
	}
	p.line(LineItem, title)
	p.field("endpoint", r.Endpoint+" over "+r.Transport)
	if r.Loopback {
		p.field("", "a server on this machine (loopback)")
	}
	p.field("network", strings.Join(r.Hosts, ", ")+" only; redirects stay within the origin")
	if r.BearerFromEnv != "" {
		p.field("sends", "a bearer token from your $"+r.BearerFromEnv)
	}
	for _, h := range r.Headers {
		if h.Confirm {
			p.field("sends", "the header "+h.Name+": the value you confirm, kept as "+h.FromEnv+" in berth's config")
			continue
		}
		if strings.EqualFold(h.Name, "authorization") {
			p.field("sends", "a credential: the whole Authorization header from your $"+h.FromEnv)
			continue
		}
		p.field("sends", "the header "+h.Name+" from your $"+h.FromEnv)
	}
	if o := r.OAuth; o != nil {
		p.oauth(o)
	}
	if r.BearerFromEnv == "" && len(r.Headers) == 0 && r.OAuth == nil {
		p.field("sends", "no credentials")
	}
}

// oauth says what signing in to a remote means: the resource, the
// authorization server, the scopes, where the token is kept and the one
// origin it is sent to.
func (p *printer) oauth(o *OAuth) {
	as := "the authorization server the server names (discovered at sign-in)"
	if o.Issuer != "" {
		as = o.Issuer
	}
	scopes := "the scopes the server names"
	if len(o.Scopes) > 0 {
		scopes = "scopes " + strings.Join(o.Scopes, ", ")
	}
	p.field("sends", "an OAuth access token, once you sign in: the server may ask for a sign-in, which berth discovers when it answers 401 with its protected-resource metadata")
	p.field("signs in", "to "+o.Resource+" at "+as+" as you, asking for "+scopes+"; the token is kept in berth's secret store and sent only to "+o.SentTo)
	p.field("renews", "the token without asking you again while the authorization server allows: berth also asks for offline_access where the authorization server offers it; berth logout forgets the token")
	if o.IssuerOtherHost != "" {
		p.field("auth server", o.IssuerOtherHost+" is another host than the server's: you sign in there, and it issues the token")
	}
	if o.ClientID != "" {
		p.field("client", "the pre-registered public client "+strconv.Quote(o.ClientID))
	} else {
		p.field("client", "registered at sign-in (your own client from berth's config, a client ID metadata document or dynamic registration, as the authorization server offers)")
	}
	if o.RedirectPort != 0 {
		p.field("redirect", fmt.Sprintf("http://127.0.0.1:%d/callback (a fixed port on this machine)", o.RedirectPort))
	}
}

func (p *printer) tools(t ToolFilter) {
	switch {
	case len(t.Allow) == 0 && len(t.Deny) == 0:
		p.field("tools", "all the tools it offers")
	case len(t.Allow) == 0:
		p.field("tools", "all it offers except "+strings.Join(t.Deny, ", "))
	default:
		s := "only " + strings.Join(t.Allow, ", ")
		if len(t.Deny) > 0 {
			s += ", never " + strings.Join(t.Deny, ", ")
		}
		p.field("tools", s)
	}
}

// printer collects the lines of a disclosure.
type printer struct {
	lines []Line
}

func (p *printer) line(k LineKind, text string) {
	p.lines = append(p.lines, Line{Kind: k, Text: text})
}

func (p *printer) blank() { p.line(LineBlank, "") }

func (p *printer) field(label, value string) {
	p.lines = append(p.lines, Line{Kind: LineField, Label: label, Text: value})
}

// Printable escapes every character a terminal could act on (control
// characters such as ESC and newline, bidirectional overrides and other
// invisible format characters), Go-quoted, and every byte that is not
// UTF-8 as \xNN, so that text from a bundle or a server cannot redraw,
// hide or forge what a person reads.
func Printable(s string) string { return escape(s, false) }

// Cut cuts s to at most n bytes at a character boundary, marking a cut
// with "…" (which adds 3 bytes): for text shown to a person or a client
// (a notification, a progress message, a relayed line).
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// PrintableLines is Printable for text that may span lines: newlines and
// tabs stay.
func PrintableLines(s string) string { return escape(s, true) }

func escape(s string, keepLines bool) string {
	hidden := func(r rune) bool {
		return r != ' ' && !unicode.IsPrint(r) && !(keepLines && (r == '\n' || r == '\t'))
	}
	if strings.IndexFunc(s, hidden) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			// A byte that is not UTF-8 (0x9b is CSI to some terminals).
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func quoteArgv(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n\"'\\$`") && !isVarOnly(a) {
			out[i] = strconv.Quote(a)
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}

// isVarOnly reports whether a's only special characters are those of
// ${bundle} and ${workspace} references, which read better unquoted.
func isVarOnly(a string) bool {
	r := strings.NewReplacer("${bundle}", "", "${workspace}", "")
	return !strings.ContainsAny(r.Replace(a), " \t\n\"'\\$`")
}

func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// bundlePathList shows a {"bundlePath": [...]} value as the server gets
// it, before ${bundle} is resolved: ${bundle}/a, ${bundle}/b.
func bundlePathList(paths []string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = "${bundle}/" + p
	}
	return strings.Join(out, ", ")
}
