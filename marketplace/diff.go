package marketplace

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
)

// AuthorityDiff is what changes in what a plugin may do between two
// versions: the installed one and a candidate. Upgrade shows it before
// anything happens, and asks again when authority grows.
type AuthorityDiff struct {
	From    string            `json:"from"` // versions
	To      string            `json:"to"`
	Changes []AuthorityChange `json:"changes"`
	// InstalledToolsFromCatalog is true when the installed side's tool
	// list is the catalog's word now, not the list recorded at install:
	// the trust record was written by a berth that did not keep it.
	// WriteText says so.
	InstalledToolsFromCatalog bool `json:"installedToolsFromCatalog,omitempty"`
}

// AuthorityChange is one difference.
type AuthorityChange struct {
	// Area is "server", "program", "argv", "fetch", "env", "sandbox",
	// "endpoint", "host", "credential", "tool-filter", "native-tool" or
	// "tool".
	Area string `json:"area"`
	// Subject is the server, native tool or tool it is about.
	Subject string `json:"subject"`
	// Change is "added", "removed" or "changed".
	Change string `json:"change"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
	// Grows is true when the change gives the plugin more authority, or
	// other authority (anything but a pure removal).
	Grows bool `json:"grows"`
}

// Empty reports whether nothing changes.
func (d *AuthorityDiff) Empty() bool { return len(d.Changes) == 0 }

// Grows reports whether any change grows the plugin's authority; such an
// upgrade always needs a confirmation.
func (d *AuthorityDiff) Grows() bool {
	return slices.ContainsFunc(d.Changes, func(c AuthorityChange) bool { return c.Grows })
}

// DiffAuthority compares the summaries of two versions: servers added or
// removed, programs, argv, fetched packages, environment sources, network
// endpoints and hosts, credentials, tool filters, native tools, and listed
// tools added or changed.
func DiffAuthority(fromVersion string, from *catalog.Summary, toVersion string, to *catalog.Summary) *AuthorityDiff {
	d := &AuthorityDiff{From: fromVersion, To: toVersion, Changes: []AuthorityChange{}}
	add := func(area, subject, change, old, new string) {
		d.Changes = append(d.Changes, AuthorityChange{Area: area, Subject: subject, Change: change, Old: old, New: new, Grows: change != "removed"})
	}
	serverName := func(s catalog.SummaryServer) string { return s.Name }
	fs, ts := indexBy(from.Servers, serverName), indexBy(to.Servers, serverName)
	for _, n := range unionKeys(fs, ts) {
		f, inF := fs[n]
		t, inT := ts[n]
		switch {
		case !inF:
			// A new server's authority, item by item as for a changed
			// one: the credentials of a new remote, the variables and
			// packages of a new local server.
			add("server", n, "added", "", describeServer(t))
			if x := t.Stdio; x != nil {
				setDiff(add, "fetch", n, nil, fetches(x.Fetches))
				setDiff(add, "env", n, nil, envs(x.Env))
			}
			if r := t.Remote; r != nil {
				setDiff(add, "host", n, nil, r.Hosts)
				setDiff(add, "credential", n, nil, credentials(r))
			}
			continue
		case !inT:
			add("server", n, "removed", describeServer(f), "")
			continue
		}
		if f.Kind != t.Kind {
			add("server", n, "changed", describeServer(f), describeServer(t))
			continue
		}
		if fx, tx := f.Stdio, t.Stdio; fx != nil && tx != nil {
			if fx.Program != tx.Program || fx.Command != tx.Command || fx.SHA256 != tx.SHA256 {
				add("program", n, "changed", describeProgram(fx), describeProgram(tx))
			}
			if !slices.Equal(fx.Argv, tx.Argv) || fx.Cwd != tx.Cwd {
				add("argv", n, "changed", strings.Join(fx.Argv, " ")+" (in "+fx.Cwd+")", strings.Join(tx.Argv, " ")+" (in "+tx.Cwd+")")
			}
			setDiff(add, "fetch", n, fetches(fx.Fetches), fetches(tx.Fetches))
			setDiff(add, "env", n, envs(fx.Env), envs(tx.Env))
			sandboxDiff(add, n, f.Sandbox, t.Sandbox)
		}
		if fr, tr := f.Remote, t.Remote; fr != nil && tr != nil {
			if fr.Endpoint != tr.Endpoint || fr.Transport != tr.Transport {
				add("endpoint", n, "changed", fr.Endpoint+" over "+fr.Transport, tr.Endpoint+" over "+tr.Transport)
			}
			setDiff(add, "host", n, fr.Hosts, tr.Hosts)
			setDiff(add, "credential", n, credentials(fr), credentials(tr))
		}
		if !slices.Equal(f.Tools.Allow, t.Tools.Allow) || !slices.Equal(f.Tools.Deny, t.Tools.Deny) {
			add("tool-filter", n, "changed", describeFilter(f.Tools), describeFilter(t.Tools))
		}
	}
	toolName := func(x catalog.SummaryNativeTool) string { return x.Name }
	fn, tn := indexBy(from.NativeTools, toolName), indexBy(to.NativeTools, toolName)
	for _, n := range unionKeys(fn, tn) {
		f, inF := fn[n]
		t, inT := tn[n]
		switch {
		case !inF:
			add("native-tool", n, "added", "", t.Executable+" sha256 "+t.SHA256)
		case !inT:
			add("native-tool", n, "removed", f.Executable+" sha256 "+f.SHA256, "")
		case f.Executable != t.Executable || f.SHA256 != t.SHA256 || f.Size != t.Size:
			add("native-tool", n, "changed", f.Executable+" sha256 "+f.SHA256, t.Executable+" sha256 "+t.SHA256)
		}
		if inF && inT {
			sandboxDiff(add, n, f.Sandbox, t.Sandbox)
		}
	}
	ft, tt := map[string]catalog.Tool{}, map[string]catalog.Tool{}
	for _, x := range from.Tools {
		ft[x.Server+"__"+x.Name] = x
	}
	for _, x := range to.Tools {
		tt[x.Server+"__"+x.Name] = x
	}
	for _, n := range unionKeys(ft, tt) {
		f, inF := ft[n]
		t, inT := tt[n]
		switch {
		case !inF:
			add("tool", n, "added", "", describeTool(t))
		case !inT:
			add("tool", n, "removed", describeTool(f), "")
		case describeTool(f) != describeTool(t):
			add("tool", n, "changed", describeTool(f), describeTool(t))
		}
	}
	return d
}

// sandboxDiff adds the changes of a stdio server's or native tool
// provider's sandbox, one item per path read, path written and host or
// network reached (sandboxItems), so that any authority that grows (a new
// path, none to hosts to unrestricted, a new host, a declaration removed:
// back to the default profile) is an added item. A candidate whose
// catalog summary does not state the sandbox grows: it is not known
// before the bundle is downloaded, and the review at install shows it.
func sandboxDiff(add func(area, subject, change, old, new string), subject string, from, to *catalog.SummarySandbox) {
	switch {
	case from == nil && to == nil:
		return
	case to == nil:
		add("sandbox", subject, "changed", strings.Join(sandboxItems(from), "; "), "not stated by the catalog (the review at install shows it)")
		return
	case from == nil:
		add("sandbox", subject, "changed", "not stated", strings.Join(sandboxItems(to), "; "))
		return
	}
	was, now := sandboxItems(from), sandboxItems(to)
	if n := review.NewSandbox(from.Declared).Network; n == bundle.NetworkUnrestricted || n == bundle.NetworkUndeclared {
		// Any host covers every host: a list of hosts in its place is
		// the removal of "any host", not new hosts.
		for _, it := range now {
			if strings.HasPrefix(it, "network ") && !slices.Contains(was, it) {
				was = append(was, it)
			}
		}
	}
	setDiff(add, "sandbox", subject, was, now)
}

// sandboxItems lists the authority of a stated sandbox, one item each:
// "read P" for every path it reads (written or not), "write P" for every
// path it writes, and "network H" for every host or "network: any host
// ..." for an open network. The default profile is its paths and
// "network: any host (not declared)".
func sandboxItems(s *catalog.SummarySandbox) []string {
	sb := review.NewSandbox(s.Declared)
	out := []string{}
	for _, p := range append(slices.Clone(sb.Read), sb.Write...) {
		out = append(out, "read "+p)
	}
	for _, p := range sb.Write {
		out = append(out, "write "+p)
	}
	switch sb.Network {
	case bundle.NetworkHosts:
		for _, h := range sb.Hosts {
			out = append(out, "network "+h)
		}
	case bundle.NetworkUnrestricted, bundle.NetworkUndeclared:
		out = append(out, "network: "+sb.NetworkWords())
	}
	return out
}

func setDiff(add func(area, subject, change, old, new string), area, subject string, from, to []string) {
	for _, x := range to {
		if !slices.Contains(from, x) {
			add(area, subject, "added", "", x)
		}
	}
	for _, x := range from {
		if !slices.Contains(to, x) {
			add(area, subject, "removed", x, "")
		}
	}
}

func fetches(fs []catalog.Fetch) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Package+" with "+f.Tool+" from "+f.Registry)
	}
	return out
}

func envs(es []catalog.EnvSource) []string {
	out := []string{}
	for _, e := range es {
		if e.BundlePath != nil {
			out = append(out, e.Name+" = bundle paths "+strings.Join(e.BundlePath, ", "))
			continue
		}
		out = append(out, e.Name+" from $"+e.FromEnv)
	}
	return out
}

func credentials(r *catalog.SummaryRemote) []string {
	out := []string{}
	if r.BearerFromEnv != "" {
		out = append(out, "bearer token from $"+r.BearerFromEnv)
	}
	for _, h := range r.Headers {
		out = append(out, "header "+h.Name+" from $"+h.FromEnv)
	}
	if o := r.OAuth; o != nil {
		// Each part of a sign-in is its own item, so that a new scope or
		// another authorization server shows as a grown credential.
		// An unpinned issuer or no scopes leave the choice to the server:
		// an item of their own, so that dropping a pin or the scopes grows.
		out = append(out, "OAuth sign-in")
		for _, s := range o.Scopes {
			out = append(out, "OAuth scope "+s)
		}
		if len(o.Scopes) == 0 {
			out = append(out, "OAuth scopes the server names")
		}
		if o.Issuer != "" {
			out = append(out, "OAuth sign-in at "+o.Issuer)
		} else {
			out = append(out, "OAuth sign-in at the authorization server the server names")
		}
		if o.ClientID != "" {
			out = append(out, "OAuth client "+o.ClientID)
		}
	}
	return out
}

func describeServer(s catalog.SummaryServer) string {
	switch {
	case s.Stdio != nil:
		return "local server running " + describeProgram(s.Stdio)
	case s.Remote != nil:
		return "remote server " + s.Remote.Endpoint
	}
	return s.Kind + " server"
}

func describeProgram(x *catalog.SummaryStdio) string {
	s := x.Command + " (" + x.Program
	if x.SHA256 != "" {
		s += ", sha256 " + x.SHA256
	}
	return s + ")"
}

func describeFilter(f catalog.ToolFilter) string {
	switch {
	case len(f.Allow) == 0 && len(f.Deny) == 0:
		return "all tools"
	case len(f.Allow) == 0:
		return "all except " + strings.Join(f.Deny, ", ")
	}
	s := "only " + strings.Join(f.Allow, ", ")
	if len(f.Deny) > 0 {
		s += ", never " + strings.Join(f.Deny, ", ")
	}
	return s
}

func describeTool(t catalog.Tool) string {
	s := t.Description
	if a := t.Annotations; a != nil {
		var hints []string
		for _, h := range []struct {
			name string
			v    *bool
		}{{"readOnly", a.ReadOnlyHint}, {"destructive", a.DestructiveHint}, {"idempotent", a.IdempotentHint}, {"openWorld", a.OpenWorldHint}} {
			if h.v != nil {
				hints = append(hints, fmt.Sprintf("%s=%v", h.name, *h.v))
			}
		}
		if len(hints) > 0 {
			s += " [" + strings.Join(hints, " ") + "]"
		}
	}
	return s
}

// WriteText writes the diff for a person: one line per change, the ones
// that grow authority marked with "+", and a line saying when the
// installed side's tool list is the catalog's word
// (InstalledToolsFromCatalog).
func (d *AuthorityDiff) WriteText(w io.Writer) error {
	var b strings.Builder
	d.writeChanges(&b)
	if d.InstalledToolsFromCatalog {
		fmt.Fprintf(&b, "The tools listed for %s are the catalog's word now, not the list it gave when you installed it: the trust record was written by a berth that did not keep that list, so a tool the catalog has since added to %s's list is not shown as added.\n", d.From, d.From)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (d *AuthorityDiff) writeChanges(b *strings.Builder) {
	if d.Empty() {
		fmt.Fprintf(b, "What %s may do does not change from %s.\n", d.To, d.From)
		return
	}
	fmt.Fprintf(b, "What changes from %s to %s:\n", d.From, d.To)
	for _, c := range d.Changes {
		mark := "-"
		if c.Grows {
			mark = "+"
		}
		line := fmt.Sprintf("  %s %s %s %s", mark, c.Area, c.Subject, c.Change)
		switch c.Area {
		case "program", "argv", "fetch", "env", "endpoint", "host", "credential", "tool-filter":
			// Of a server: "env of server files added", never "env
			// files added".
			line = fmt.Sprintf("  %s %s of server %s %s", mark, c.Area, c.Subject, c.Change)
		case "sandbox":
			// Of a server or a native tool provider.
			line = fmt.Sprintf("  %s sandbox of %s %s", mark, c.Subject, c.Change)
		}
		switch c.Change {
		case "added":
			line += ": " + c.New
		case "removed":
			line += ": " + c.Old
		default:
			line += ": " + c.Old + " -> " + c.New
		}
		b.WriteString(review.Printable(line) + "\n")
	}
	if d.Grows() {
		b.WriteString("Its authority grows (+): confirm only if you expected this.\n")
	}
}
