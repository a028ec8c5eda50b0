// Package review turns a validated bundle into a disclosure: everything the
// bundle asks to be allowed to do, in words for a person deciding whether to
// trust it, as text and as JSON. A review never reads the value of an
// environment variable and never runs anything.
package review

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/bundle/runtimefetch"
	"github.com/berth-mcp/berth/fetched"
)

// Disclosure is the review of one bundle. Its JSON form is stable: tools
// and golden files read it.
type Disclosure struct {
	Name        string       `json:"name"`
	Version     string       `json:"version"`
	Description string       `json:"description"`
	Publisher   *Publisher   `json:"publisher,omitempty"`
	License     string       `json:"license,omitempty"`
	Homepage    string       `json:"homepage,omitempty"`
	Requires    string       `json:"requiresBerth,omitempty"`
	Digest      string       `json:"digest"`
	Files       Files        `json:"files"`
	Servers     []Server     `json:"servers"`
	NativeTools []NativeTool `json:"nativeTools"`
	// ImportedFrom is set for a bundle imported from another format: the
	// format, what each input became, the declared surface, and what was
	// not carried over (imported.go).
	ImportedFrom *bundle.ImportedFrom `json:"importedFrom,omitempty"`
	// ImportedFromClaimed is true when ImportedFrom is what the bundle's
	// own berth.json says, not what berth found: berth did not convert a
	// source of another format in this review, so anyone could have
	// written the field (berth import writes it too; berth cannot tell).
	ImportedFromClaimed bool `json:"importedFromClaimed,omitempty"`
	// MCPBSignature is set for a .mcpb with a signature block.
	MCPBSignature *MCPBSignature `json:"mcpbSignature,omitempty"`
	// PinnedOnImport are the fetches berth pinned while it read this
	// source (berth import --pin), with when and where each was
	// resolved.
	PinnedOnImport []bundle.PinRecord `json:"pinnedOnImport,omitempty"`
	// Notes are remarks on how the source was read.
	Notes []string `json:"notes,omitempty"`
}

// Publisher is who publishes the bundle, as the manifest claims. Only a
// signature proves who signed it.
type Publisher struct {
	Name string `json:"name"`
	URL  string `json:"url,omitempty"`
}

// Files counts the bundle's files (regular files and symlinks).
type Files struct {
	Count     int   `json:"count"`
	TotalSize int64 `json:"totalSize"`
}

// Server is one MCP server of the bundle.
type Server struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Kind        ServerKind `json:"kind"`
	Stdio       *Stdio     `json:"stdio,omitempty"`
	Remote      *Remote    `json:"remote,omitempty"`
	Tools       ToolFilter `json:"tools"`
	Timeouts    Timeouts   `json:"timeouts"`
}

// ServerKind is how a server runs (Server.Kind).
type ServerKind string

// Kinds of servers.
const (
	KindStdio  ServerKind = "stdio"  // a local process berth starts
	KindRemote ServerKind = "remote" // an endpoint berth connects to
)

// Program is where a stdio server's program comes from (Stdio.Program).
type Program string

// Where programs come from.
const (
	ProgramBundled   Program = "bundled"   // a ${bundle}/ file, checked by its hash
	ProgramWorkspace Program = "workspace" // a ${workspace}/ file
	ProgramHost      Program = "host"      // a program on the host's PATH
)

// Stdio discloses a local server: what it runs, and the authority it runs
// with.
type Stdio struct {
	// Authority says in one sentence what a local server can do: confined
	// to what it declares, or to the default profile (Sandbox.Authority).
	Authority string `json:"authority"`
	// Sandbox is the authority in detail: the paths it reads and writes,
	// the network, the runtime prefix (docs/sandbox.md).
	Sandbox *Sandbox `json:"sandbox"`
	// Program says where the program comes from.
	Program Program `json:"program"`
	// Command is the command as written, variables unexpanded.
	Command string `json:"command"`
	// SHA256 is the hash of a bundled program.
	SHA256 string `json:"sha256,omitempty"`
	// Argv is the command and its arguments, variables unexpanded.
	Argv []string `json:"argv"`
	// Cwd is the working directory, variables unexpanded.
	Cwd string `json:"cwd"`
	// Env lists the variables the server receives and where each comes
	// from; never a value.
	Env []EnvVar `json:"env"`
	// RuntimeFetch lists packages downloaded and run at start.
	RuntimeFetch []Fetch `json:"runtimeFetch,omitempty"`
}

// EnvVar is one environment variable a server receives.
type EnvVar struct {
	Name    string `json:"name"`
	FromEnv string `json:"fromEnv,omitempty"`
	// BundlePath, instead of FromEnv, lists the paths of the bundle that
	// PYTHONPATH or NODE_PATH is set to ({"bundlePath": [...]}).
	BundlePath []string `json:"bundlePath,omitempty"`
	// Confirm is set when the value is one the operator confirms
	// (importedFrom.inputs with confirm): FromEnv is then only the name
	// berth keeps it under, never read from the environment.
	Confirm bool `json:"confirm,omitempty"`
}

// Fetch is the package a runtime fetcher downloads when the server starts.
type Fetch struct {
	Tool    string `json:"tool"`
	Package string `json:"package"`
	// Ecosystem is "npm", "jsr", "pypi", "go" or "oci".
	Ecosystem string `json:"ecosystem"`
	// Registry is where the package comes from unless the operator set a
	// mirror: a URL, or an image registry's host.
	Registry string `json:"registry"`
	// Dependencies says who decides the versions of the package's
	// dependencies.
	Dependencies string `json:"dependencies"`
	// Staged is true when berth resolves the package and its whole
	// dependency tree at trust (berth trust, berth install) and stages
	// them, so that the server starts offline (npm and PyPI runners,
	// docs/sandbox.md); false when the server fetches when it starts.
	Staged bool `json:"staged"`
}

// Dependency resolution, per ecosystem.
var dependencies = map[string]string{
	runtimefetch.EcosystemNPM:  "resolved by the registry when the server starts; the bundle pins only the package itself",
	runtimefetch.EcosystemJSR:  "resolved by the registry when the server starts; the bundle pins only the package itself",
	runtimefetch.EcosystemPyPI: "resolved by the registry when the server starts; the bundle pins only the package itself",
	runtimefetch.EcosystemGo:   "fixed by the module's go.mod and checked against the Go checksum database",
	runtimefetch.EcosystemOCI:  "none to resolve: the digest fixes the image and all its layers",
}

// stagedDependencies is Fetch.Dependencies of a package staged at trust.
const stagedDependencies = "resolved at trust, recorded in the fetch lock (berth status shows it); the bundle pins only the package itself"

// FetchDependencies says who decides the versions of the dependencies of
// a package fetched from ecosystem (Fetch.Dependencies), for code that
// rebuilds a Disclosure from a summary of one (a catalog entry).
func FetchDependencies(ecosystem string) string { return dependencies[ecosystem] }

// NewFetch discloses a package a server's command fetches: staged at
// trust (npm and PyPI runners), or fetched when the server starts.
func NewFetch(p *runtimefetch.Fetch) Fetch {
	f := Fetch{Tool: p.Tool, Package: p.Package, Ecosystem: p.Ecosystem, Registry: p.Registry, Dependencies: dependencies[p.Ecosystem], Staged: fetched.Stages(p)}
	if f.Staged {
		f.Dependencies = stagedDependencies
	}
	return f
}

// fetchDir is the working directory of a runtime-fetched server.
const fetchDir = "a new empty directory of berth's (never the bundle or the workspace)"

// Remote discloses a server reached over the network.
type Remote struct {
	Endpoint  string `json:"endpoint"`
	Transport string `json:"transport"`
	Loopback  bool   `json:"loopback,omitempty"`
	// BearerFromEnv names the variable the bearer token is read from.
	BearerFromEnv string   `json:"bearerFromEnv,omitempty"`
	Headers       []EnvVar `json:"headers"`
	Hosts         []string `json:"hosts"`
	// OAuth is set when the remote signs in with OAuth (auth.oauth).
	OAuth *OAuth `json:"oauth,omitempty"`
}

// OAuth discloses a remote's OAuth sign-in: who the operator signs in to,
// where, for what, and where the token goes.
type OAuth struct {
	// Resource is the protected resource signed in to: the endpoint.
	Resource string `json:"resource"`
	// Issuer is the pinned authorization server's issuer; "" when it is
	// the one the server names (discovered at sign-in).
	Issuer string `json:"issuer,omitempty"`
	// IssuerOtherHost is the pinned issuer's host when it is another host than
	// the resource's; "" otherwise.
	IssuerOtherHost string `json:"issuerOtherHost,omitempty"`
	// Scopes are the scopes asked for; empty: those the server names.
	Scopes []string `json:"scopes"`
	// ClientID is the pre-registered public client, "" when berth
	// registers at sign-in (a client ID metadata document or dynamic
	// registration, as the authorization server offers).
	ClientID string `json:"clientId,omitempty"`
	// RedirectPort is the loopback redirect's fixed port; 0 for any.
	RedirectPort int `json:"redirectPort,omitempty"`
	// SentTo is the one origin the token is sent to: the resource's.
	SentTo string `json:"sentTo"`
}

// NewOAuth discloses the sign-in o declares for the remote at endpoint
// (the normalized endpoint URL of the review), for code that rebuilds a
// Disclosure from a summary of one (a catalog entry) as well.
func NewOAuth(endpoint string, o *bundle.OAuth) *OAuth {
	if o == nil {
		return nil
	}
	out := &OAuth{Resource: endpoint, Issuer: o.Issuer, Scopes: append([]string{}, o.Scopes...), ClientID: o.ClientID, RedirectPort: o.RedirectPort}
	ep, err := bundle.ParseEndpoint(endpoint)
	if err == nil {
		out.SentTo = origin(ep)
	}
	if o.Issuer != "" {
		if iss, err := bundle.ParseIssuer(o.Issuer); err == nil && (ep == nil || iss.Host != ep.Host) {
			out.IssuerOtherHost = iss.Host
		}
	}
	return out
}

// origin writes scheme://host[:port] with the normalized host and without
// a default port.
func origin(ep *bundle.Endpoint) string {
	u := normalizedURL(ep)
	p, _ := url.Parse(u)
	return p.Scheme + "://" + p.Host
}

// ToolFilter is the manifest's narrowing of a server's tools.
type ToolFilter struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// Timeouts are the effective timeouts, defaults filled in.
type Timeouts struct {
	Startup string `json:"startup"`
	Call    string `json:"call"`
}

// NativeTool is a tool provider executable of the bundle.
type NativeTool struct {
	Name       string `json:"name"`
	Executable string `json:"executable"`
	SHA256     string `json:"sha256"`
	Size       int64  `json:"size"`
	// Authority and Sandbox are as a stdio server's (Stdio).
	Authority string   `json:"authority"`
	Sandbox   *Sandbox `json:"sandbox"`
}

// New reviews a bundle that Open accepted. It panics if b has no manifest
// or listing (a programmer error: review only valid bundles).
func New(b *bundle.Bundle) *Disclosure {
	if b.Manifest == nil || b.Listing() == nil {
		panic("review: New needs a bundle that bundle.Open accepted")
	}
	m, l := b.Manifest, b.Listing()
	d := &Disclosure{
		Name:        m.Name,
		Version:     m.Version,
		Description: m.Description,
		License:     m.License,
		Homepage:    m.Homepage,
		Digest:      b.Digest,
		Files:       Files{Count: len(l.Entries), TotalSize: l.TotalSize()},
		Servers:     []Server{},
		NativeTools: []NativeTool{},
	}
	if m.Publisher != nil {
		d.Publisher = &Publisher{Name: m.Publisher.Name, URL: m.Publisher.URL}
	}
	if m.Requires != nil {
		d.Requires = m.Requires.Berth
	}
	for _, name := range slices.Sorted(maps.Keys(m.MCPServers)) {
		d.Servers = append(d.Servers, server(name, m.MCPServers[name], l))
	}
	for _, name := range slices.Sorted(maps.Keys(m.NativeTools)) {
		sb := NewSandbox(m.NativeTools[name].Sandbox)
		nt := NativeTool{Name: name, Executable: m.NativeTools[name].Executable, Authority: sb.Authority(), Sandbox: sb}
		if e, ok := l.Lookup(strings.TrimPrefix(nt.Executable, "${bundle}/")); ok {
			nt.SHA256 = hex.EncodeToString(e.SHA256[:])
			nt.Size = e.Size
		}
		d.NativeTools = append(d.NativeTools, nt)
	}
	d.importedFrom(b)
	d.markConfirmed(m)
	return d
}

func server(name string, s *bundle.Server, l *bundle.Listing) Server {
	startup, call := s.ParseTimeouts()
	out := Server{
		Name:        name,
		Description: s.Description,
		Tools:       ToolFilter{Allow: []string{}, Deny: []string{}},
		Timeouts:    Timeouts{Startup: startup.String(), Call: call.String()},
	}
	if s.Tools != nil {
		out.Tools.Allow = append(out.Tools.Allow, s.Tools.Allow...)
		out.Tools.Deny = append(out.Tools.Deny, s.Tools.Deny...)
	}
	switch {
	case s.Stdio != nil:
		out.Kind = KindStdio
		sb := NewSandbox(s.Sandbox)
		st := &Stdio{
			Authority: sb.Authority(),
			Sandbox:   sb,
			Command:   s.Stdio.Command,
			Argv:      append([]string{s.Stdio.Command}, s.Stdio.Args...),
			Cwd:       s.Stdio.Cwd,
			Env:       envVars(s.Stdio.Env),
		}
		if st.Cwd == "" {
			st.Cwd = "${bundle}"
		}
		switch {
		case strings.HasPrefix(st.Command, "${bundle}/"):
			st.Program = ProgramBundled
			if e, ok := l.Lookup(strings.TrimPrefix(st.Command, "${bundle}/")); ok {
				st.SHA256 = hex.EncodeToString(e.SHA256[:])
			}
		case strings.HasPrefix(st.Command, "${workspace}"):
			st.Program = ProgramWorkspace
		default:
			st.Program = ProgramHost
			pkgs, _, _ := runtimefetch.Packages(s.Stdio.Command, s.Stdio.Args)
			for _, p := range pkgs {
				st.RuntimeFetch = append(st.RuntimeFetch, NewFetch(&p))
				st.Cwd = fetchDir
			}
		}
		out.Stdio = st
	case s.Remote != nil:
		out.Kind = KindRemote
		r := &Remote{
			Transport: s.Remote.Transport,
			Headers:   envVars(s.Remote.Headers),
			Hosts:     []string{},
		}
		if ep, err := bundle.ParseEndpoint(s.Remote.URL); err == nil {
			r.Endpoint = normalizedURL(ep)
			r.Loopback = ep.Loopback
		}
		if s.Remote.Auth != nil {
			r.BearerFromEnv = s.Remote.Auth.BearerFromEnv
			if r.Endpoint != "" {
				r.OAuth = NewOAuth(r.Endpoint, s.Remote.Auth.OAuth)
			}
		}
		if s.Remote.Network != nil {
			r.Hosts = append(r.Hosts, s.Remote.Network.Hosts...)
		}
		out.Remote = r
	}
	return out
}

// normalizedURL writes the endpoint with its normalized host and without a
// default port.
func normalizedURL(ep *bundle.Endpoint) string {
	u := *ep.URL
	host := ep.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if p := u.Port(); p != "" && !(u.Scheme == "https" && p == "443") && !(u.Scheme == "http" && p == "80") {
		host = net.JoinHostPort(ep.Host, p)
	}
	u.Host = host
	return u.String()
}

func envVars(m map[string]bundle.EnvSource) []EnvVar {
	out := []EnvVar{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, EnvVar{Name: k, FromEnv: m[k].FromEnv, BundlePath: m[k].BundlePath})
	}
	return out
}

// JSON returns the disclosure as indented JSON.
func (d *Disclosure) JSON() []byte {
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		panic(err) // plain data; cannot fail
	}
	return append(data, '\n')
}

// Hash returns "sha256:<hex>" of the compact JSON of the disclosure, which
// trust records keep so a later review can be compared with the one that
// was accepted. The notes, the MCPB signature block, when fetches were
// pinned and whether importedFrom is only claimed describe how the source
// was read, not the bundle, and are left out: a .mcpb and the bundle
// berth import writes from it have the same hash. So is a runtime prefix
// LocateRuntimes found: it describes the reviewer's machine.
func (d *Disclosure) Hash() string {
	c := *d
	c.Notes, c.MCPBSignature, c.ImportedFromClaimed = nil, nil, false
	c.PinnedOnImport = nil
	// Where the program's runtime prefix is on the reviewer's machine
	// describes the machine, not the bundle.
	c.Servers = slices.Clone(d.Servers)
	for i, s := range c.Servers {
		if s.Stdio != nil && s.Stdio.Sandbox != nil && s.Stdio.Sandbox.RuntimePrefix != "" {
			st, sb := *s.Stdio, *s.Stdio.Sandbox
			sb.RuntimePrefix = ""
			st.Sandbox = &sb
			c.Servers[i].Stdio = &st
		}
	}
	data, err := json.Marshal(&c)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Source is one host environment variable the bundle's servers read (a
// fromEnv or bearerFromEnv), with every use of it. It is a name only: a
// review never reads a value.
type Source struct {
	Name string `json:"name"`
	// Uses say where it goes: "server main: env TOKEN", "server api: the
	// header X-Team", "server api: the bearer token".
	Uses []string `json:"uses"`
}

// Sources lists the variables the bundle's servers read, sorted by name;
// a value the operator confirms is not one (berth never reads it from the
// environment or the secret store).
func (d *Disclosure) Sources() []Source {
	uses := map[string][]string{}
	for _, s := range d.Servers {
		pre := "server " + s.Name + ": "
		if s.Stdio != nil {
			for _, e := range s.Stdio.Env {
				if e.BundlePath != nil || e.Confirm {
					continue // paths of the bundle or a confirmed value: no host variable
				}
				uses[e.FromEnv] = append(uses[e.FromEnv], pre+"env "+e.Name)
			}
		}
		if s.Remote != nil {
			for _, h := range s.Remote.Headers {
				if h.Confirm {
					continue
				}
				uses[h.FromEnv] = append(uses[h.FromEnv], pre+"the header "+h.Name)
			}
			if s.Remote.BearerFromEnv != "" {
				uses[s.Remote.BearerFromEnv] = append(uses[s.Remote.BearerFromEnv], pre+"the bearer token")
			}
		}
	}
	out := []Source{}
	for _, n := range slices.Sorted(maps.Keys(uses)) {
		out = append(out, Source{Name: n, Uses: uses[n]})
	}
	return out
}
