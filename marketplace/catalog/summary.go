package catalog

import (
	"fmt"
	"slices"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/review"
)

// Summary is the review summary of one published version: what berth
// review shows of the bundle, computed from the real bundle when the
// curator published it, plus the tools the curator lists and their context
// cost. Install recomputes it from the downloaded bundle and refuses when
// the two differ (CheckSummary): a catalog is never trusted for it.
type Summary struct {
	Files       SummaryFiles        `json:"files"`
	Servers     []SummaryServer     `json:"servers"`
	NativeTools []SummaryNativeTool `json:"nativeTools"`
	// Tools are listed by the curator (berth cannot know them without
	// running the servers); optional.
	Tools []Tool `json:"tools,omitempty"`
	// ContextTokens estimates the context the listed tools' names, titles
	// and descriptions cost a model (EstimateTokens); 0 when none are listed.
	ContextTokens int `json:"contextTokens"`
}

// SummaryFiles counts the bundle's files.
type SummaryFiles struct {
	Count     int   `json:"count"`
	TotalSize int64 `json:"totalSize"`
}

// SummaryServer is one MCP server of the bundle. Exactly one of Stdio and
// Remote is set, as Kind says.
type SummaryServer struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Kind        string         `json:"kind"`
	Stdio       *SummaryStdio  `json:"stdio,omitempty"`
	Remote      *SummaryRemote `json:"remote,omitempty"`
	Tools       ToolFilter     `json:"tools"`
	Timeouts    Timeouts       `json:"timeouts"`
	// Sandbox is the authority a stdio server declares; nil for a
	// summary written before berth stated it (and for a remote): "not
	// stated", never refused for that (CheckSummary).
	Sandbox *SummarySandbox `json:"sandbox,omitempty"`
}

// SummarySandbox states the sandbox of a stdio server or native tool
// provider, one of two ways: Declared is the manifest's own declaration
// (the manifest's type, so the two cannot drift apart), or Default is true
// when the bundle declares none and the server runs under berth's default
// profile (docs/sandbox.md). The review's words are rebuilt from it
// (review.NewSandbox).
type SummarySandbox struct {
	Default  bool            `json:"default,omitempty"`
	Declared *bundle.Sandbox `json:"declared,omitempty"`
}

// SummaryStdio is a local server: the program it runs, how, and with what.
type SummaryStdio struct {
	Program string   `json:"program"` // "bundled", "host" or "workspace"
	Command string   `json:"command"`
	SHA256  string   `json:"sha256,omitempty"`
	Argv    []string `json:"argv"`
	Cwd     string   `json:"cwd"`
	// Env lists each variable and the host variable it comes from.
	Env []EnvSource `json:"env"`
	// Fetches are the packages a runtime fetcher downloads and runs.
	Fetches []Fetch `json:"fetches,omitempty"`
}

// SummaryRemote is a server reached over the network.
type SummaryRemote struct {
	Endpoint      string      `json:"endpoint"`
	Transport     string      `json:"transport"`
	Loopback      bool        `json:"loopback,omitempty"`
	BearerFromEnv string      `json:"bearerFromEnv,omitempty"`
	Headers       []EnvSource `json:"headers"`
	Hosts         []string    `json:"hosts"`
	// OAuth is set when the remote signs in with OAuth (auth.oauth).
	OAuth *SummaryOAuth `json:"oauth,omitempty"`
}

// SummaryOAuth is a remote's OAuth sign-in as its manifest declares it
// (the manifest's own type, so the two cannot drift apart); the review's
// words are rebuilt from it (review.NewOAuth).
type SummaryOAuth = bundle.OAuth

// EnvSource is a variable or header and the host variable it is read from.
type EnvSource struct {
	Name    string `json:"name"`
	FromEnv string `json:"fromEnv"`
	// BundlePath lists the paths of the bundle that PYTHONPATH or
	// NODE_PATH is set to, instead of FromEnv.
	BundlePath []string `json:"bundlePath,omitempty"`
}

// Fetch is a package fetched and run when a server starts, and where it
// comes from.
type Fetch struct {
	Tool    string `json:"tool"`
	Package string `json:"package"`
	// Ecosystem is "npm", "jsr", "pypi", "go" or "oci".
	Ecosystem string `json:"ecosystem"`
	// Registry is where the package comes from unless the operator set a
	// mirror: a URL, or an image registry's host.
	Registry string `json:"registry"`
}

// ToolFilter is a server's allow and deny lists.
type ToolFilter struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// Timeouts are a server's effective timeouts.
type Timeouts struct {
	Startup string `json:"startup"`
	Call    string `json:"call"`
}

// SummaryNativeTool is a native tool provider executable of the bundle.
type SummaryNativeTool struct {
	Name       string `json:"name"`
	Executable string `json:"executable"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	// Sandbox is as a server's (SummaryServer.Sandbox).
	Sandbox *SummarySandbox `json:"sandbox,omitempty"`
}

// Tool is a tool the curator lists for a server or native tool provider.
type Tool struct {
	// Server is the name of the server or native tool provider.
	Server      string           `json:"server"`
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Annotations *ToolAnnotations `json:"annotations,omitempty"`
}

// ToolAnnotations are the MCP tool annotations, as hints the curator saw.
type ToolAnnotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// NewSummary summarizes a bundle's disclosure. It lists no tools; the
// curator adds those.
func NewSummary(d *review.Disclosure) Summary {
	s := Summary{
		Files:       SummaryFiles{Count: d.Files.Count, TotalSize: d.Files.TotalSize},
		Servers:     []SummaryServer{},
		NativeTools: []SummaryNativeTool{},
	}
	for _, rs := range d.Servers {
		ss := SummaryServer{
			Name:        rs.Name,
			Description: rs.Description,
			Kind:        string(rs.Kind),
			Tools:       ToolFilter{Allow: nonNil(rs.Tools.Allow), Deny: nonNil(rs.Tools.Deny)},
			Timeouts:    Timeouts{Startup: rs.Timeouts.Startup, Call: rs.Timeouts.Call},
		}
		if st := rs.Stdio; st != nil {
			x := &SummaryStdio{Program: string(st.Program), Command: st.Command, SHA256: st.SHA256, Argv: nonNil(st.Argv), Cwd: st.Cwd, Env: []EnvSource{}}
			for _, e := range st.Env {
				x.Env = append(x.Env, EnvSource{Name: e.Name, FromEnv: e.FromEnv, BundlePath: e.BundlePath})
			}
			for _, f := range st.RuntimeFetch {
				x.Fetches = append(x.Fetches, Fetch{Tool: f.Tool, Package: f.Package, Ecosystem: f.Ecosystem, Registry: f.Registry})
			}
			ss.Stdio = x
			ss.Sandbox = summarySandbox(st.Sandbox)
		}
		if r := rs.Remote; r != nil {
			x := &SummaryRemote{Endpoint: r.Endpoint, Transport: r.Transport, Loopback: r.Loopback, BearerFromEnv: r.BearerFromEnv, Headers: []EnvSource{}, Hosts: nonNil(r.Hosts)}
			for _, h := range r.Headers {
				x.Headers = append(x.Headers, EnvSource{Name: h.Name, FromEnv: h.FromEnv})
			}
			if o := r.OAuth; o != nil {
				x.OAuth = &SummaryOAuth{Scopes: o.Scopes, ClientID: o.ClientID, RedirectPort: o.RedirectPort, Issuer: o.Issuer}
				if len(o.Scopes) == 0 {
					x.OAuth.Scopes = nil
				}
			}
			ss.Remote = x
		}
		s.Servers = append(s.Servers, ss)
	}
	for _, nt := range d.NativeTools {
		s.NativeTools = append(s.NativeTools, SummaryNativeTool{Name: nt.Name, Executable: nt.Executable, SHA256: nt.SHA256, Size: nt.Size, Sandbox: summarySandbox(nt.Sandbox)})
	}
	return s
}

// summarySandbox states a disclosed sandbox as the manifest declared it;
// nil when the disclosure does not state it either.
func summarySandbox(d *review.Sandbox) *SummarySandbox {
	if d == nil || d.NotStated {
		return nil
	}
	out := &SummarySandbox{}
	if !d.Declared() {
		out.Default = true
		return out
	}
	sb := &bundle.Sandbox{}
	if d.Filesystem == review.FilesystemDeclared {
		sb.Filesystem = &bundle.SandboxFilesystem{}
		for _, r := range d.Read {
			if r != bundle.VarBundle {
				sb.Filesystem.Read = append(sb.Filesystem.Read, r)
			}
		}
		sb.Filesystem.Write = append(sb.Filesystem.Write, d.Write...)
	}
	if d.Network != bundle.NetworkUndeclared {
		sb.Network = &bundle.SandboxNetwork{Mode: d.Network, Hosts: slices.Clone(d.Hosts), Reason: d.Reason}
	}
	out.Declared = sb
	return out
}

// disclosedSandbox rebuilds the disclosed sandbox a summary states.
func disclosedSandbox(s *SummarySandbox) *review.Sandbox {
	if s == nil {
		return &review.Sandbox{NotStated: true}
	}
	return review.NewSandbox(s.Declared)
}

func nonNil(s []string) []string {
	return append([]string{}, s...)
}

// normalize makes the empty lists of a decoded summary empty rather than
// null, as NewSummary makes them, so the two compare equal.
func (s *Summary) normalize() {
	if s.Servers == nil {
		s.Servers = []SummaryServer{}
	}
	if s.NativeTools == nil {
		s.NativeTools = []SummaryNativeTool{}
	}
	for i := range s.Servers {
		sv := &s.Servers[i]
		sv.Tools.Allow, sv.Tools.Deny = nonNil(sv.Tools.Allow), nonNil(sv.Tools.Deny)
		if x := sv.Stdio; x != nil {
			x.Argv = nonNil(x.Argv)
			if x.Env == nil {
				x.Env = []EnvSource{}
			}
		}
		if x := sv.Remote; x != nil {
			x.Hosts = nonNil(x.Hosts)
			if x.Headers == nil {
				x.Headers = []EnvSource{}
			}
		}
	}
}

// Disclosure rebuilds the review of a version from its summary, so that
// berth show says it in the words of berth review.
func (s *Summary) Disclosure(p *Plugin, v *Version) *review.Disclosure {
	d := &review.Disclosure{
		Name:        p.Name,
		Version:     v.Version,
		Description: p.Description,
		License:     p.License,
		Homepage:    p.Homepage,
		Requires:    v.RequiresBerth,
		Digest:      v.Digest,
		Files:       review.Files{Count: s.Files.Count, TotalSize: s.Files.TotalSize},
		Servers:     []review.Server{},
		NativeTools: []review.NativeTool{},
	}
	if p.Publisher != nil {
		d.Publisher = &review.Publisher{Name: p.Publisher.Name, URL: p.Publisher.URL}
	}
	for _, ss := range s.Servers {
		rs := review.Server{
			Name:        ss.Name,
			Description: ss.Description,
			Kind:        review.ServerKind(ss.Kind),
			Tools:       review.ToolFilter{Allow: nonNil(ss.Tools.Allow), Deny: nonNil(ss.Tools.Deny)},
			Timeouts:    review.Timeouts{Startup: ss.Timeouts.Startup, Call: ss.Timeouts.Call},
		}
		if st := ss.Stdio; st != nil {
			sb := disclosedSandbox(ss.Sandbox)
			x := &review.Stdio{Authority: sb.Authority(), Sandbox: sb, Program: review.Program(st.Program), Command: st.Command, SHA256: st.SHA256, Argv: nonNil(st.Argv), Cwd: st.Cwd, Env: []review.EnvVar{}}
			for _, e := range st.Env {
				x.Env = append(x.Env, review.EnvVar{Name: e.Name, FromEnv: e.FromEnv, BundlePath: e.BundlePath})
			}
			for _, f := range st.Fetches {
				// The summary keeps no runner options: argv holds --bun
				// when the runner has it.
				x.RuntimeFetch = append(x.RuntimeFetch, review.NewFetch(&runtimefetch.Fetch{Tool: f.Tool, Package: f.Package, Ecosystem: f.Ecosystem, Registry: f.Registry, Options: st.Argv}))
			}
			rs.Stdio = x
		}
		if r := ss.Remote; r != nil {
			x := &review.Remote{Endpoint: r.Endpoint, Transport: r.Transport, Loopback: r.Loopback, BearerFromEnv: r.BearerFromEnv, Headers: []review.EnvVar{}, Hosts: nonNil(r.Hosts)}
			for _, h := range r.Headers {
				x.Headers = append(x.Headers, review.EnvVar{Name: h.Name, FromEnv: h.FromEnv})
			}
			if o := r.OAuth; o != nil {
				x.OAuth = review.NewOAuth(r.Endpoint, &bundle.OAuth{Scopes: o.Scopes, ClientID: o.ClientID, RedirectPort: o.RedirectPort, Issuer: o.Issuer})
			}
			rs.Remote = x
		}
		d.Servers = append(d.Servers, rs)
	}
	for _, nt := range s.NativeTools {
		sb := disclosedSandbox(nt.Sandbox)
		d.NativeTools = append(d.NativeTools, review.NativeTool{Name: nt.Name, Executable: nt.Executable, SHA256: nt.SHA256, Size: nt.Size, Authority: sb.Authority(), Sandbox: sb})
	}
	return d
}

// EstimateTokens estimates the context cost, in tokens, of tool
// definitions a model sees: about one token per four bytes of name, title
// and description, plus a fixed 12 tokens per tool for the JSON around
// them. It is a rough guide for comparing plugins, not a tokenizer.
func EstimateTokens(tools []Tool) int {
	n := 0
	for _, t := range tools {
		n += 12 + (len(t.Name)+len(t.Title)+len(t.Description)+3)/4
	}
	return n
}

type summaryProblem struct {
	path, msg string
	warning   bool
}

// check validates a summary's own consistency.
func (s *Summary) check() []summaryProblem {
	var ps []summaryProblem
	add := func(p, format string, args ...any) {
		ps = append(ps, summaryProblem{path: p, msg: fmt.Sprintf(format, args...)})
	}
	names := map[string]bool{}
	for i, sv := range s.Servers {
		p := fmt.Sprintf(".servers[%d]", i)
		if sv.Name == "" || names[sv.Name] {
			add(p+".name", "server names must be present and unique (got %q)", sv.Name)
		}
		names[sv.Name] = true
		switch {
		case sv.Kind == "stdio" && sv.Stdio != nil && sv.Remote == nil:
		case sv.Kind == "remote" && sv.Remote != nil && sv.Stdio == nil:
		default:
			add(p+".kind", "kind is %q; a stdio server has only \"stdio\", a remote one only \"remote\"", sv.Kind)
		}
		if sb := sv.Sandbox; sb != nil && (sv.Kind != "stdio" || sb.Default == (sb.Declared != nil)) {
			add(p+".sandbox", "a sandbox is stated only for a stdio server, as exactly one of \"default\": true and \"declared\"")
		}
	}
	for i, nt := range s.NativeTools {
		if nt.Name == "" || names[nt.Name] {
			add(fmt.Sprintf(".nativeTools[%d].name", i), "native tool names must be present and unique among servers and native tools (got %q)", nt.Name)
		}
		names[nt.Name] = true
		if sb := nt.Sandbox; sb != nil && sb.Default == (sb.Declared != nil) {
			add(fmt.Sprintf(".nativeTools[%d].sandbox", i), "a sandbox is stated as exactly one of \"default\": true and \"declared\"")
		}
	}
	tools := map[string]bool{}
	for i, t := range s.Tools {
		p := fmt.Sprintf(".tools[%d]", i)
		if !names[t.Server] {
			add(p+".server", "the tool %q names the server %q, which the bundle does not have", t.Name, t.Server)
		}
		if t.Name == "" || tools[t.Server+"\x00"+t.Name] {
			add(p+".name", "tool names must be present and unique per server (got %q)", t.Name)
		}
		tools[t.Server+"\x00"+t.Name] = true
	}
	if want := EstimateTokens(s.Tools); s.ContextTokens != want {
		ps = append(ps, summaryProblem{path: ".contextTokens", msg: fmt.Sprintf("contextTokens is %d, but the listed tools come to %d; berth catalog sign recomputes it", s.ContextTokens, want), warning: true})
	}
	return ps
}

// Hints are the annotations of a tool worth a warning or a reassurance,
// as berth show marks them: "destructive", "read-only".
func (t *Tool) Hints() []string {
	an := t.Annotations
	if an == nil {
		return nil
	}
	var out []string
	if an.DestructiveHint != nil && *an.DestructiveHint {
		out = append(out, "destructive")
	}
	if an.ReadOnlyHint != nil && *an.ReadOnlyHint {
		out = append(out, "read-only")
	}
	return out
}

// SummaryOf is the review summary of a staged or downloaded bundle, as a
// catalog would list it (without the curator's tool list).
func SummaryOf(b *bundle.Bundle) Summary { return NewSummary(review.New(b)) }
