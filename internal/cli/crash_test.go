package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berth-mcp/berth/bundle"
	"github.com/berth-mcp/berth/store"
)

// berthCmd runs the berth binary that testscript.Main put on PATH, with
// its own BERTH_HOME.
func berthCmd(home string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command("berth", args...)
	cmd.Env = append(append(os.Environ(), "BERTH_HOME="+home), env...)
	return cmd
}

func runBerth(t *testing.T, home string, args ...string) string {
	t.Helper()
	out, err := berthCmd(home, nil, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// makeBundle writes a copy of the stdio fixture named name, with extra
// files so that staging takes a while.
func makeBundle(t *testing.T, dir, name string, extra int) string {
	t.Helper()
	src := "../../testdata/bundles/good/stdio-bundled"
	if out, err := exec.Command("cp", "-a", src, dir).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	m, _ := os.ReadFile(filepath.Join(dir, "berth.json"))
	os.WriteFile(filepath.Join(dir, "berth.json"), bytes.Replace(m, []byte(`"acme-notes"`), []byte(`"`+name+`"`), 1), 0o644)
	for i := range extra {
		sub := filepath.Join(dir, "data", fmt.Sprintf("d%02d", i%20))
		os.MkdirAll(sub, 0o755)
		os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%04d", i)), bytes.Repeat([]byte{byte(i)}, 4096), 0o644)
	}
	return dir
}

// checkConsistent asserts what must hold after any crash: list and verify
// work, every visible snapshot is whole, and gc leaves no leftovers.
func checkConsistent(t *testing.T, home string) {
	t.Helper()
	var list []listEntry
	if err := json.Unmarshal([]byte(runBerth(t, home, "list", "--json")), &list); err != nil {
		t.Fatalf("list --json: %v", err)
	}
	runBerth(t, home, "verify")
	store := filepath.Join(home, "store", "sha256")
	entries, _ := os.ReadDir(store)
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".tmp-") {
			continue
		}
		// A visible snapshot is never half-staged: its metadata exists
		// and it re-hashes to its name.
		digest := "sha256:" + e.Name()
		tree, ps, err := bundle.ReadTree(t.Context(), filepath.Join(store, e.Name()), nil)
		if err != nil || len(ps) > 0 || tree.Listing.Digest() != digest {
			t.Fatalf("snapshot %s is not whole: %v %v", e.Name(), err, ps)
		}
		if _, err := os.Stat(filepath.Join(store, e.Name()+".meta.json")); err != nil {
			t.Fatalf("snapshot %s has no metadata", e.Name())
		}
	}
	runBerth(t, home, "gc")
	// No temp file of an interrupted write outlives gc, anywhere.
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Fatalf("gc left the temp file %s behind", p)
		}
		return nil
	})
	entries, _ = os.ReadDir(store)
	referenced := map[string]bool{}
	for _, l := range list {
		referenced[strings.TrimPrefix(l.Digest, "sha256:")] = true
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".meta.json")
		if strings.HasPrefix(e.Name(), ".tmp-") || !referenced[name] {
			t.Fatalf("gc left %s behind", e.Name())
		}
	}
}

func TestCrashDuringTrust(t *testing.T) {
	steps := []string{"stage-copied", "stage-meta-written", "stage-renamed", "signature-written", "record-written", "generation-bumped"}
	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			home := t.TempDir()
			dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), "crashy", 50)
			runBerth(t, home, "keygen", "--out", filepath.Join(home, "k"))
			runBerth(t, home, "sign", dir, "--key", filepath.Join(home, "k.key"))
			runBerth(t, home, "signers", "add-key", "k", filepath.Join(home, "k.pub"))

			err := berthCmd(home, []string{crashEnv + "=" + step}, "trust", "--yes", dir).Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("berth trust was not killed at %s: %v", step, err)
			}
			checkConsistent(t, home)
			// The interrupted trust can simply be run again.
			runBerth(t, home, "trust", "--yes", dir)
			checkConsistent(t, home)
			out := runBerth(t, home, "verify", "crashy")
			if !strings.HasPrefix(out, "ok ") {
				t.Fatalf("verify after recovery: %s", out)
			}
		})
	}
	for _, step := range []string{"revoke-state-written", "revoke-removed"} {
		t.Run(step, func(t *testing.T) {
			home := t.TempDir()
			dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), "crashy", 0)
			digest := strings.TrimSpace(runBerth(t, home, "digest", dir))
			runBerth(t, home, "trust", "--yes", "--allow-unsigned", "--digest", digest, dir)
			err := berthCmd(home, []string{crashEnv + "=" + step}, "revoke", "--yes", "crashy").Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("berth revoke was not killed at %s: %v", step, err)
			}
			checkConsistent(t, home)
			// The revoke bumped the generation whatever it left to do, and
			// running it again finishes the job.
			paths, _ := store.NewPaths(home)
			if st, _ := store.Open(paths, nil).State(); st.Generation != 2 {
				t.Fatalf("generation %d after trust and a killed revoke, want 2", st.Generation)
			}
			if strings.Contains(runBerth(t, home, "list"), "crashy") {
				runBerth(t, home, "revoke", "--yes", "crashy")
			}
			if out := runBerth(t, home, "list"); strings.Contains(out, "crashy") {
				t.Fatalf("list after revoke: %s", out)
			}
			checkConsistent(t, home)
		})
	}
}

// TestCrashDuringStateWrites kills berth with the temp file of state.json
// or config.json complete but not renamed: the old file stays in force,
// and gc removes the temp file.
func TestCrashDuringStateWrites(t *testing.T) {
	for _, step := range []string{"config-temp-written", "state-temp-written"} {
		t.Run(step, func(t *testing.T) {
			home := t.TempDir()
			key := filepath.Join(t.TempDir(), "k")
			runBerth(t, home, "keygen", "--out", key)
			runBerth(t, home, "signers", "add-key", "first", key+".pub")
			err := berthCmd(home, []string{crashEnv + "=" + step}, "signers", "add-key", "second", key+".pub").Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("berth signers add-key was not killed at %s: %v", step, err)
			}
			temps, _ := filepath.Glob(filepath.Join(home, ".*.tmp-*"))
			if len(temps) != 1 {
				t.Fatalf("temp files after the crash: %v, want one", temps)
			}
			paths, _ := store.NewPaths(home)
			if st, err := store.Open(paths, nil).State(); err != nil || st.Generation != 1 {
				t.Fatalf("state after the crash: %+v %v", st, err)
			}
			checkConsistent(t, home)
		})
	}
}

// TestKillAtRandomTimes SIGKILLs berth trust at random moments while it
// stages a bundle of 2,000 files.
func TestKillAtRandomTimes(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	home := t.TempDir()
	dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), "big", 2000)
	digest := strings.TrimSpace(runBerth(t, home, "digest", dir))
	rng := rand.New(rand.NewPCG(7, 11))
	killed := 0
	for i := range 12 {
		cmd := berthCmd(home, nil, "trust", "--yes", "--allow-unsigned", "--digest", digest, dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		if err := cmd.Wait(); err != nil {
			killed++
		}
		checkConsistent(t, home)
		if i%4 == 3 && strings.Contains(runBerth(t, home, "list"), "big") {
			runBerth(t, home, "revoke", "--yes", "big")
			checkConsistent(t, home)
		}
	}
	t.Logf("%d of 12 runs were killed before they finished", killed)
	if killed == 0 {
		t.Fatal("no run was killed mid-way; the test proves nothing")
	}
}

// TestConcurrentChanges runs several processes that trust, revoke and
// change the configuration at once; the generation must end equal to the
// number of changes that succeeded.
func TestConcurrentChanges(t *testing.T) {
	home := t.TempDir()
	const workers, rounds = 4, 4
	type plugin struct{ dir, digest string }
	plugins := make([]plugin, workers)
	for w := range workers {
		dir := makeBundle(t, filepath.Join(t.TempDir(), "b"), fmt.Sprintf("p%d", w), 0)
		plugins[w] = plugin{dir, strings.TrimSpace(runBerth(t, home, "digest", dir))}
	}
	key := filepath.Join(t.TempDir(), "k")
	runBerth(t, home, "keygen", "--out", key)
	var (
		mu      sync.Mutex
		changes int
		wg      sync.WaitGroup
	)
	for w := range workers {
		wg.Go(func() {
			p := plugins[w]
			for r := range rounds {
				ops := [][]string{
					{"trust", "--yes", "--allow-unsigned", "--digest", p.digest, p.dir},
					{"revoke", "--yes", fmt.Sprintf("p%d", w)},
					{"signers", "add-key", fmt.Sprintf("s%d-%d", w, r), key + ".pub"},
				}
				for _, op := range ops {
					if out, err := berthCmd(home, nil, op...).CombinedOutput(); err != nil {
						t.Errorf("berth %v: %v\n%s", op, err, out)
						continue
					}
					mu.Lock()
					changes++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	paths, _ := store.NewPaths(home)
	st, err := store.Open(paths, nil).State()
	if err != nil {
		t.Fatal(err)
	}
	if st.Generation != uint64(changes) {
		t.Fatalf("generation %d after %d changes", st.Generation, changes)
	}
	cfg, _ := store.Open(paths, nil).Config()
	if len(cfg.Signers) != workers*rounds {
		t.Fatalf("%d signers, want %d: a config write was lost", len(cfg.Signers), workers*rounds)
	}
	checkConsistent(t, home)
}
