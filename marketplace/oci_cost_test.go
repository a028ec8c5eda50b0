package marketplace

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/internal/ocitest"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
)

// TestOCIRequestCounts measures what a catalog costs in requests and
// bytes on the wire, against the in-process registry without auth and
// with a bearer-token round trip, and holds the update's figures that
// docs/scale.md takes as its inputs. Run with -v to print the table.
func TestOCIRequestCounts(t *testing.T) {
	type row struct {
		step          string
		req           int
		up, down      int64
		wantReq, auth string
	}
	var rows []row
	for _, auth := range []string{"none", "token"} {
		e := newEnv(t, repo.Expiries{})
		e.publish("acme-notes", "1.0.0")
		e.publish("acme-tasks", "1.0.0")
		reg := ocitest.NewRegistry(t, ocitest.Options{TokenAuth: auth == "token"})
		e.ociConfig = t.TempDir()
		loc := "oci://" + reg.Host() + "/acme/catalog"
		src, err := ParseSource(loc)
		if err != nil {
			t.Fatal(err)
		}
		c := OpenCache(filepath.Join(e.dir, "oci-home", "catalogs"), &CacheOptions{Now: e.clk.now, Source: SourceOptions{DockerConfig: e.ociConfig}})
		take := func(step string, want int) {
			in, out := reg.WireBytes()
			st := reg.Stats().Total()
			r := row{step: step, req: st.Requests, up: in, down: out, auth: auth}
			if want > 0 {
				r.wantReq = fmt.Sprint(want)
				if st.Requests != want {
					t.Errorf("%s, auth %s: %d requests, want %d:\n%s", step, auth, st.Requests, want, reg.Stats())
				}
			}
			rows = append(rows, r)
			reg.Reset()
		}
		reg.Reset()
		ociPush(t, e, loc)
		take("push, 2 plugins (first)", 0)
		ociPush(t, e, loc)
		take("push again, unchanged", 0)
		if _, err := c.Add(e.ctx, "acme", src, RootPin{SHA256: e.init.RootSHA256}); err != nil {
			t.Fatal(err)
		}
		take("marketplace add", 0)
		if _, err := c.Refresh(e.ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		take("update, unchanged", map[string]int{"none": 1, "token": 3}[auth])
		e.publish("acme-notes", "1.1.0")
		reg.Reset()
		ociPush(t, e, loc)
		take("push after one new version", 0)
		if _, err := c.Refresh(e.ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		take("update, one new version", 0)
		l, err := c.Load("acme")
		if err != nil {
			t.Fatal(err)
		}
		d, err := c.Download(e.ctx, "acme", l.Catalog.Plugin("acme-notes").Version("1.1.0"), &DownloadOptions{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		d.Close()
		take("install's download (archive + signature)", 0)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-42s %-6s %9s %10s %10s\n", "step", "auth", "requests", "bytes up", "bytes down")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-42s %-6s %9d %10d %10d\n", r.step, r.auth, r.req, r.up, r.down)
	}
	t.Log("\n" + b.String())
}

// TestCatalogSizePerVersion measures how catalog.json grows with the
// versions it lists (docs/scale.md takes ~1.5 KB per version from it):
// the test bundle published as 1, 10 and 20 plugins. Run with -v.
func TestCatalogSizePerVersion(t *testing.T) {
	e := newEnv(t, repo.Expiries{})
	sizes := map[int]int64{}
	for i := 1; i <= 20; i++ {
		e.publish(fmt.Sprintf("acme-p%02d", i), "1.0.0")
		if i == 1 || i == 10 || i == 20 {
			pub, err := e.repo().Published()
			if err != nil {
				t.Fatal(err)
			}
			sizes[i] = pub.Targets.Signed.Targets[catalog.TargetName].Length
			t.Logf("%2d plugins, one version each: catalog.json %d bytes", i, sizes[i])
		}
	}
	per := float64(sizes[20]-sizes[10]) / 10
	t.Logf("%.0f bytes per version listed", per)
	if per < 1000 || per > 2500 {
		t.Errorf("catalog.json grows by %.0f bytes per version; docs/scale.md says about 1.5 KB: measure again and update it", per)
	}
}
