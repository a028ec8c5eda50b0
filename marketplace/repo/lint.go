package repo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/internal/textio"
	"github.com/berth-mcp/berth/trust"
)

// LintReport is what Lint found in a catalog repository.
type LintReport struct {
	Dir string `json:"dir"`
	// Plugins counts the entries of the working copy that pass.
	Plugins  int                `json:"plugins"`
	Problems []*catalog.Problem `json:"problems"`
	// Published is true when the working copy is what the catalog's
	// current version publishes.
	Published bool `json:"published"`
	// TimestampExpires and TargetsExpires are those of the current version.
	TimestampExpires time.Time `json:"timestampExpires,omitzero"`
	TargetsExpires   time.Time `json:"targetsExpires,omitzero"`
}

// OK reports whether the report has no errors (warnings are fine).
func (r *LintReport) OK() bool { return !catalog.HasErrors(r.Problems) }

// Lint checks a catalog repository without its keys: the working copy
// DIR/catalog.json against every catalog rule (strictly: an unknown field
// anywhere is an error), the archives and signatures it lists in DIR (size
// and sha256), the published metadata (signatures, links, expiry), and
// whether the working copy has changes not published yet. The error is
// non-nil only when DIR is not a catalog repository.
func Lint(dir string, opts *Options) (*LintReport, error) {
	r, err := Open(dir, "", opts)
	if err != nil {
		return nil, err
	}
	now := r.now()
	rep := &LintReport{Dir: dir, Problems: []*catalog.Problem{}}
	add := func(p *catalog.Problem) { rep.Problems = append(rep.Problems, p) }
	data, err := os.ReadFile(filepath.Join(dir, workingFile))
	if err != nil {
		return nil, err
	}
	if _, err := decodeStrict(data); err != nil {
		add(&catalog.Problem{Path: workingFile, Rule: catalog.RuleCatalogSyntax, Message: fmt.Sprintf("%v (each entry is checked below as clients would; berth catalog sign needs the whole file to decode strictly)", err)})
	}
	cat, ps, err := catalog.Parse(data)
	if err != nil {
		add(&catalog.Problem{Path: workingFile, Rule: catalog.RuleCatalogSyntax, Message: err.Error()})
		return rep, nil
	}
	rep.Problems = append(rep.Problems, ps...)
	rep.Plugins = len(cat.Plugins)
	for i, p := range cat.Plugins {
		for j, v := range p.Versions {
			where := fmt.Sprintf("plugins[%d].versions[%d]", i, j)
			for k, u := range v.URLs {
				if isRelative(u) {
					if msg := checkServedFile(dir, u, v.Archive.Size, v.Archive.SHA256); msg != "" {
						add(&catalog.Problem{Plugin: p.Name, Path: fmt.Sprintf("%s.urls[%d]", where, k), Rule: catalog.RuleVersionFile, Message: msg})
					}
				}
			}
			if isRelative(v.SignatureURL) {
				if msg := checkServedFile(dir, v.SignatureURL, -1, ""); msg != "" {
					add(&catalog.Problem{Plugin: p.Name, Path: where + ".signatureURL", Rule: catalog.RuleVersionFile, Message: msg})
				}
			}
		}
	}
	pub, err := r.load()
	if err != nil {
		add(&catalog.Problem{Path: "timestamp.json", Rule: catalog.RuleMetadataExpiry, Message: err.Error()})
		return rep, nil
	}
	var compacted bytes.Buffer
	rep.Published = json.Compact(&compacted, data) == nil && bytes.Equal(pub.catalog, compacted.Bytes())
	if !rep.Published {
		add(&catalog.Problem{Path: workingFile, Rule: catalog.RuleUnpublished, Message: "the working copy differs from the published catalog; publish it with berth catalog sign " + dir, Warning: true})
	}
	rep.TimestampExpires = pub.timestamp.Signed.Expires
	rep.TargetsExpires = pub.targets.Signed.Expires
	for _, m := range []struct {
		file    string
		expires time.Time
		fix     string
	}{
		{"timestamp.json", pub.timestamp.Signed.Expires, "berth catalog refresh"},
		{fmt.Sprintf("%d.snapshot.json", pub.snapshot.Signed.Version), pub.snapshot.Signed.Expires, "berth catalog refresh"},
		{fmt.Sprintf("%d.targets.json", pub.targets.Signed.Version), pub.targets.Signed.Expires, "berth catalog sign"},
		{"root.json", pub.root.Signed.Expires, "a new catalog (berth cannot renew a root yet)"},
	} {
		if now.After(m.expires) {
			add(&catalog.Problem{Path: m.file, Rule: catalog.RuleMetadataExpiry, Message: fmt.Sprintf("expired at %s, so clients refuse the catalog; renew it with %s", m.expires.Format(time.RFC3339), m.fix)})
		}
	}
	for _, w := range expiryWarnings(now, r.exp, pub.targets.Signed.Expires, pub.root.Signed.Expires) {
		add(&catalog.Problem{Path: "targets.json", Rule: catalog.RuleMetadataExpiry, Message: w, Warning: true})
	}
	return rep, nil
}

func isRelative(loc string) bool { return catalog.CheckLocation(loc) == nil && !textio.HasScheme(loc) }

// checkServedFile checks a file the catalog serves; size < 0 and sum ""
// skip those checks (a signature).
func checkServedFile(dir, rel string, size int64, sum string) string {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Sprintf("%s is not in the catalog directory (%v); clients cannot download it", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", rel)
	}
	if size < 0 {
		if fi.Size() > trust.MaxSignatureSize {
			return fmt.Sprintf("%s is %d bytes, over the signature limit of %d", rel, fi.Size(), trust.MaxSignatureSize)
		}
		return ""
	}
	if fi.Size() != size {
		return fmt.Sprintf("%s is %d bytes, but the catalog says %d", rel, fi.Size(), size)
	}
	f, err := os.Open(p)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err.Error()
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Sprintf("%s has sha256 %s, but the catalog says %s", rel, got, sum)
	}
	return ""
}
