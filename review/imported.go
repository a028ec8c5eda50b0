package review

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/fetched"
)

// MCPBSignature discloses the signature block appended to a .mcpb. It is
// shown and never trusted: berth's trust rests on Sigstore signatures over
// its canonical listing.
type MCPBSignature struct {
	Present bool `json:"present"`
	// Verifies is true when the CMS signature is valid over the zip for
	// the certificate it carries; that certificate is checked against no
	// trust store.
	Verifies    bool       `json:"verifies"`
	Problem     string     `json:"problem,omitempty"`
	SelfSigned  bool       `json:"selfSigned"`
	Subject     string     `json:"subject,omitempty"`
	Issuer      string     `json:"issuer,omitempty"`
	Fingerprint string     `json:"fingerprint,omitempty"`
	NotBefore   *time.Time `json:"notBefore,omitempty"`
	NotAfter    *time.Time `json:"notAfter,omitempty"`
	Trust       string     `json:"trust"`
}

const mcpbSignatureTrust = "berth's trust does not rest on this signature: berth verifies Sigstore signatures over its canonical listing (berth trust, berth verify)"

// importedFrom fills in what the review says of a bundle imported from
// another format.
func (d *Disclosure) importedFrom(b *bundle.Bundle) {
	d.ImportedFrom = b.Manifest.ImportedFrom
	// Only a conversion berth made while opening this source is berth's
	// finding; a berth.json's importedFrom is the bundle's claim.
	d.ImportedFromClaimed = d.ImportedFrom != nil && (b.Import == nil || b.Import.Format == "")
	d.Notes = append(d.Notes, b.Notes...)
	if b.Import != nil {
		d.PinnedOnImport = b.Import.Pinned
	}
	if b.Import == nil || b.Import.Signature == nil {
		return
	}
	s := b.Import.Signature
	out := &MCPBSignature{Present: true, Verifies: s.Verifies, Problem: s.Problem, SelfSigned: s.SelfSigned,
		Subject: s.Subject, Issuer: s.Issuer, Fingerprint: s.Fingerprint, Trust: mcpbSignatureTrust}
	if !s.NotBefore.IsZero() {
		nb, na := s.NotBefore, s.NotAfter
		out.NotBefore, out.NotAfter = &nb, &na
	}
	d.MCPBSignature = out
}

var formatTitles = map[string]string{
	bundle.FormatMCPB:         "an MCP Bundle (Claude Desktop extension)",
	bundle.FormatClaudePlugin: "a Claude Code plugin",
	bundle.FormatMCPRegistry:  "an MCP Registry server.json",
}

func (p *printer) importHead(d *Disclosure) {
	for _, n := range d.Notes {
		p.field("note", n)
	}
	imp := d.ImportedFrom
	if imp != nil {
		what := formatTitles[imp.Format]
		if what == "" {
			what = imp.Format
		}
		version := ""
		if imp.FormatVersion != "" {
			version = ", format version " + imp.FormatVersion
			if imp.FormatVersionInferred {
				version += " inferred: the file names no version, and it is valid under this one only"
			}
		}
		claim := ""
		if d.ImportedFromClaimed {
			// Written by anyone: say whose word it is.
			p.field("imported", fmt.Sprintf("only claimed: the berth.json says it was generated from %s (%s%s); berth did not convert it here and does not check the claim (importedFrom is the bundle's own text), it reviews this berth.json as written", what, imp.Manifest, version))
			claim = " (as claimed)"
		} else {
			p.field("imported", fmt.Sprintf("from %s (%s%s); berth reviews the berth.json it generated from it", what, imp.Manifest, version))
		}
		if imp.SourceName != "" {
			named := "registry name " + imp.SourceName
			if imp.Format != bundle.FormatMCPRegistry {
				named = "source name " + strconv.Quote(imp.SourceName)
			}
			p.field("", named+claim+", berth name "+d.Name)
		}
		if dv := imp.DerivedVersion; dv != nil {
			p.field("version", d.Version+" derived by berth"+claim+": the source has no version; \"0.0.0-berth.\" and the first 12 hex digits of its content digest "+dv.ContentDigest+" (the digest of the bundle berth generated, with the version left blank in its berth.json); berth never orders two such versions by their digits: the one the source offers now is the newer")
		}
		for _, n := range slices.Sorted(maps.Keys(imp.ServerNames)) {
			p.field("", "server "+strconv.Quote(imp.ServerNames[n])+claim+" of the source is berth's server "+strconv.Quote(n))
		}
		if imp.SourceVersion != "" {
			p.field("", "version "+imp.SourceVersion+" in the source"+claim+", "+d.Version+" in berth")
		}
		if imp.Platform != "" {
			p.field("", "imported for "+imp.Platform+claim+": the source has platform-specific settings")
		}
		p.pinned(d, claim)
	}
	if s := d.MCPBSignature; s != nil {
		var what string
		switch {
		case s.Fingerprint == "":
			what = "an MCPB signature block that berth cannot read (" + s.Problem + ")"
		default:
			kind := "signed by"
			if s.SelfSigned {
				kind = "self-signed by"
			}
			what = fmt.Sprintf("an MCPB signature block, %s %s (certificate sha256 %s)", kind, s.Subject, s.Fingerprint)
			if s.Verifies {
				what += "; it verifies over the zip"
			} else {
				what += "; " + s.Problem
			}
		}
		p.field("signature", what)
		p.field("", "berth's trust does not rest on it: berth verifies Sigstore signatures over its canonical listing")
	}
}

// pinned says which fetches berth pinned on import: when, to what, and
// what the source asked for. Without the time (a berth.json imported
// earlier) it is what the berth.json records.
func (p *printer) pinned(d *Disclosure, claim string) {
	at := map[string]bundle.PinRecord{}
	for _, r := range d.PinnedOnImport {
		at[r.Server] = r
	}
	for _, pf := range d.ImportedFrom.Pinned {
		asked := "the source asked for " + pf.Requested
		if pf.Requested == "" {
			asked = "the source named no version"
		}
		if r, ok := at[pf.Server]; ok {
			p.field("pinned", fmt.Sprintf("server %s: %s pinned by berth on %s: %s; %s (resolved for %s against %s)", pf.Server, pf.Package, r.At.UTC().Format(time.DateOnly), pf.Resolved, asked, r.Tool, fetched.RedactURL(r.Registry)))
			continue
		}
		p.field("pinned", fmt.Sprintf("server %s: %s pinned by berth on import%s: %s; %s", pf.Server, pf.Package, claim, pf.Resolved, asked))
	}
}

func (p *printer) importTail(d *Disclosure) {
	imp := d.ImportedFrom
	if imp == nil {
		return
	}
	if d.ImportedFromClaimed && (len(imp.Inputs) > 0 || imp.Declared != nil || imp.Compatibility != nil || len(imp.NotCarriedOver) > 0) {
		p.blank()
		p.line(LineHeading, "What follows of its source is what the berth.json's importedFrom claims; berth did not check it:")
	}
	if len(imp.Inputs) > 0 {
		p.blank()
		p.line(LineHeading, "It asks its user for these values; in berth's terms:")
		for _, in := range imp.Inputs {
			var attrs []string
			if in.Type != "" {
				attrs = append(attrs, in.Type)
			}
			if in.Required {
				attrs = append(attrs, "required")
			}
			if in.Sensitive {
				attrs = append(attrs, "sensitive")
			}
			if in.Default != "" {
				attrs = append(attrs, "default "+fmt.Sprintf("%q", in.Default))
			}
			title := in.Name
			if len(attrs) > 0 {
				title += " (" + strings.Join(attrs, ", ") + ")"
			}
			if in.Title != "" {
				title += ": " + in.Title
			}
			p.line(LineItem, title)
			p.inputDetails(in)
			p.field("becomes", in.Becomes)
		}
	}
	if decl := imp.Declared; decl != nil {
		p.blank()
		p.line(LineHeading, "It declares (what the server lists is pinned when you enable it):")
		items := func(label string, list []bundle.DeclaredItem, generated bool) {
			var names []string
			for _, it := range list {
				n := it.Name
				if it.Description != "" {
					n += " (" + it.Description + ")"
				}
				names = append(names, n)
			}
			if generated {
				names = append(names, "and more that the server makes at run time")
			}
			if len(names) > 0 {
				p.field(label, strings.Join(names, ", "))
			}
		}
		items("tools", decl.Tools, decl.ToolsGenerated)
		items("prompts", decl.Prompts, decl.PromptsGenerated)
	}
	if c := imp.Compatibility; c != nil {
		p.blank()
		p.line(LineHeading, "It needs (berth checked this machine against it):")
		if len(c.Platforms) > 0 {
			p.field("platforms", strings.Join(c.Platforms, ", "))
		}
		for _, k := range slices.Sorted(maps.Keys(c.Runtimes)) {
			p.field("runtime", k+" "+c.Runtimes[k])
		}
	}
	if len(imp.NotCarriedOver) == 0 {
		return
	}
	var hooks []bundle.NotCarried
	for _, n := range imp.NotCarriedOver {
		if n.Kind == "hook" {
			hooks = append(hooks, n)
		}
	}
	if len(hooks) > 0 {
		p.blank()
		p.line(LineHeading, fmt.Sprintf("HOOKS: the source has hooks, code that %s would run on its own events. berth never runs them:", clientOf(imp.Format)))
		for _, h := range hooks {
			p.line(LineItem, h.Field+": "+h.Reason)
		}
	}
	p.blank()
	p.line(LineHeading, "Not carried over, never run by berth:")
	for _, n := range imp.NotCarriedOver {
		if n.Kind == "hook" {
			continue
		}
		line := n.Field + " (" + n.Kind
		if n.Name != "" && !strings.HasSuffix(n.Field, n.Name) {
			line += " " + n.Name
		}
		line += "): " + n.Reason
		p.line(LineItem, line)
	}
}

func clientOf(format string) string {
	if format == bundle.FormatClaudePlugin {
		return "Claude Code"
	}
	return "its client"
}
