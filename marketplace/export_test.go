package marketplace

import (
	"context"
	"time"

	"testing"

	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/store"
)

// The test environment, exported to the external tests (package
// marketplace_test) of what the packages above marketplace do with a
// cache: marketplace/lock checks a workspace against berth.lock and
// lists the outdated plugins through a *Cache, and cannot be imported by
// this package's own tests.

// TestEnv is a curator's repository and an operator's cache and store.
type TestEnv = testEnv

// NewTestEnv returns a repository with keys and an empty cache.
func NewTestEnv(tb testing.TB) *TestEnv { return newEnv(tb, repo.Expiries{}) }

// Publish adds a generated bundle name@version to the catalog and signs.
func (e *testEnv) Publish(name, version string) { e.publish(name, version) }

// AddCatalog adds the repository to the cache as "acme".
func (e *testEnv) AddCatalog() *CatalogInfo { return e.addCatalog() }

// Store opens the operator's store.
func (e *testEnv) Store() *store.Store { return e.store() }

// Install installs from the cache, confirming everything.
func (e *testEnv) Install(st *store.Store, req InstallRequest) (*InstallResult, error) {
	return e.install(st, req)
}

// Cache is the operator's cache.
func (e *testEnv) Cache() *Cache { return e.cache }

// Ctx is the test's context.
func (e *testEnv) Ctx() context.Context { return e.ctx }

// Now is the test's clock.
func (e *testEnv) Now() time.Time { return e.clk.now() }
