package fsx

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ATTACK (issue 25, gc of temp dirs + the operator's npm settings): a
// resolution at trust writes the operator's allow-listed npm settings,
// auth tokens expanded from ${NPM_TOKEN}, in clear into
// $TMPDIR/berth-npm-*/npmrc (fetched/operator.go npmUserConfig,
// fetched/npm.go MkdirTemp("", "berth-npm-")); pip's work dir is
// berth-pypi-*, a built-in entry's bundle berth-builtin-*. A berth killed
// outright during the resolution (the slow step, where a person gives up)
// leaves them, and berth gc never sweeps them: TempPrefixes names only
// berth-download-, -extract-, -import-, -registry-, -serverjson-. The
// token then stays on disk for good.
func TestAttack25SweepTempLeavesFetchDirsWithToken(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * TempLeftoverAge)
	for _, name := range []string{"berth-npm-123", "berth-npm-scripts-123", "berth-pypi-123", "berth-builtin-123"} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "npmrc"), []byte("//registry.npmjs.org/:_authToken=\"npm_s3cret\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := SweepTemp(dir, TempPrefixes, time.Now().Add(-TempLeftoverAge)); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("berth gc left %s (an hour old, this user's) in the temp directory; a killed resolution's npmrc with the operator's auth token stays on disk", e.Name())
	}
}
