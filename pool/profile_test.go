package pool

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/store"
)

// serverIDs are the servers the pool has set up (started or not).
func serverIDs(p *Pool) []string {
	var ids []string
	for _, s := range p.Status() {
		ids = append(ids, s.ID)
	}
	slices.Sort(ids)
	return ids
}

// With Options.Profile the pool runs only the plugins the profile offers:
// the other plugin's server never starts. A change of the profile starts
// and stops plugins at the next boundary, as enable and disable do; a
// removed profile runs nothing.
func TestProfileFilterRunsOnlyTheProfilesPlugins(t *testing.T) {
	f := newFixture(t)
	f.plugin("alpha", map[string]any{"main": testServer("-tools", "pid")})
	f.plugin("beta", map[string]any{"main": testServer("-tools", "pid")})
	ctx := context.Background()
	set := func(plugins ...string) {
		t.Helper()
		if _, err := f.store.SetProfile(ctx, f.ws, "p", &store.Profile{Plugins: plugins, Mode: store.ToolsFull}, true); err != nil {
			t.Fatal(err)
		}
	}
	set("alpha")
	p := f.open(func(o *Options) { o.Profile = "p" })
	if got := serverIDs(p); !slices.Equal(got, []string{"alpha__main"}) {
		t.Fatalf("servers of a pool of profile p = [alpha]: %v (beta's must never be set up)", got)
	}
	if got := toolNames(t, p); !slices.Equal(got, []string{"alpha__main__pid"}) {
		t.Fatalf("tools: %v", got)
	}
	alphaPID := serverPIDs(t, p, "alpha__main__pid").PID

	set("beta")
	testkit.Eventually(t, 10*time.Second, "beta to start and alpha to stop", func() bool {
		names, _ := p.Tools(ctx)
		return len(names) == 1 && names[0].Name == "beta__main__pid"
	})
	testkit.Eventually(t, 2*time.Second, "alpha's server to be gone", func() bool { return !alive(alphaPID) })
	if st := status(t, p, "alpha__main"); st.State != StateStopped || st.LastError != "alpha is not offered by profile p of "+f.ws+", which this berth serves" {
		t.Fatalf("alpha's status: %+v", st)
	}
	if _, err := p.Call(ctx, "alpha__main__pid", nil, allow); err == nil {
		t.Fatal("a plugin the profile left out answered a call")
	}

	if _, err := f.store.RemoveProfile(ctx, f.ws, "p"); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "nothing to run once the profile is removed", func() bool {
		names, _ := p.Tools(ctx)
		return len(names) == 0
	})
}

// Without Options.Profile the pool runs the whole workspace, whatever its
// profiles say.
func TestProfileFilterUnsetRunsEveryPlugin(t *testing.T) {
	f := newFixture(t)
	f.plugin("alpha", map[string]any{"main": testServer("-tools", "pid")})
	f.plugin("beta", map[string]any{"main": testServer("-tools", "pid")})
	if _, err := f.store.SetProfile(context.Background(), f.ws, "p", &store.Profile{Plugins: []string{"alpha"}, Mode: store.ToolsFull}, false); err != nil {
		t.Fatal(err)
	}
	p := f.open(nil)
	if got := serverIDs(p); !slices.Equal(got, []string{"alpha__main", "beta__main"}) {
		t.Fatalf("servers: %v", got)
	}
}
