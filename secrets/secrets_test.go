package secrets

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zalando/go-keyring"

	"github.com/berth-mcp/berth/internal/keyringtest"
	"github.com/berth-mcp/berth/internal/testkit"
)

const value = "s3cr3t-value-for-the-test"

func newStore(t *testing.T) *Store {
	t.Helper()
	return Open(filepath.Join(t.TempDir(), "secrets"), nil)
}

func TestFileBackend(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, ok, err := s.Where("ACME_TOKEN"); ok || err != nil {
		t.Fatalf("empty store: Where = %v, %v", ok, err)
	}
	res, err := s.Set(ctx, "ACME_TOKEN", value, File)
	if err != nil || res.Backend != File || res.Fallback != nil || res.Replaced {
		t.Fatalf("Set = %+v, %v", res, err)
	}
	v, b, err := s.Get(ctx, "ACME_TOKEN")
	if err != nil || v != value || b != File {
		t.Fatalf("Get = %q, %q, %v", v, b, err)
	}
	if b, ok, err := s.Where("ACME_TOKEN"); !ok || b != File || err != nil {
		t.Fatalf("Where = %q, %v, %v", b, ok, err)
	}
	list, err := s.List()
	if err != nil || len(list) != 1 || list[0].Name != "ACME_TOKEN" || list[0].Backend != File {
		t.Fatalf("List = %+v, %v", list, err)
	}
	// The index never holds a value; only values.json does, mode 0600, in
	// a 0700 directory.
	idx, _ := os.ReadFile(filepath.Join(s.Dir(), "index.json"))
	if strings.Contains(string(idx), value) {
		t.Fatalf("index.json holds the value:\n%s", idx)
	}
	if runtime.GOOS != "windows" {
		for p, want := range map[string]os.FileMode{s.Dir(): 0o700, s.ValuesFile(): 0o600, filepath.Join(s.Dir(), "index.json"): 0o600} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, %v; want %04o", p, fi.Mode().Perm(), err, want)
			}
		}
	}
	if res, err := s.Set(ctx, "ACME_TOKEN", "other", File); err != nil || !res.Replaced {
		t.Fatalf("second Set = %+v, %v", res, err)
	}
	if v, _, _ := s.Get(ctx, "ACME_TOKEN"); v != "other" {
		t.Fatalf("after replace Get = %q", v)
	}
	if b, err := s.Remove(ctx, "ACME_TOKEN"); err != nil || b != File {
		t.Fatalf("Remove = %q, %v", b, err)
	}
	if _, _, err := s.Get(ctx, "ACME_TOKEN"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Remove: %v, want ErrNotFound", err)
	}
	if _, err := s.Remove(ctx, "ACME_TOKEN"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove: %v, want ErrNotFound", err)
	}
	vals, _ := os.ReadFile(s.ValuesFile())
	if strings.Contains(string(vals), "other") {
		t.Fatalf("values.json still holds the removed value:\n%s", vals)
	}
}

func TestRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	for _, c := range []struct{ name, value, want string }{
		{"1BAD", value, "not a secret name"},
		{"A-B", value, "not a secret name"},
		{"OK", "", "empty"},
		{"OK", "a\x00b", "NUL"},
		{"OK", strings.Repeat("x", MaxValueSize+1), "more than"},
	} {
		_, err := s.Set(ctx, c.name, c.value, File)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set(%q, %.10q): %v, want %q", c.name, c.value, err, c.want)
		}
		if err != nil && len(c.value) > 3 && strings.Contains(err.Error(), c.value) {
			t.Errorf("the error repeats the value: %v", err)
		}
	}
	if _, err := ParseBackend("vault"); err == nil {
		t.Fatal("ParseBackend(vault) succeeded")
	}
}

// Another local user must not be able to read a value, nor plant one:
// loose modes and symbolic links are refused, never used.
func TestRefusesFilesOthersCanReach(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("file modes do not say who may read a file on Windows")
	}
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	os.Chmod(s.ValuesFile(), 0o644)
	if _, _, err := s.Get(ctx, "ACME_TOKEN"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("Get with values.json 0644: %v", err)
	}
	os.Chmod(s.ValuesFile(), 0o600)
	os.Chmod(s.Dir(), 0o755)
	if _, err := s.List(); err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("List with the directory 0755: %v", err)
	}
	os.Chmod(s.Dir(), 0o700)

	// A link planted in place of the values file.
	elsewhere := filepath.Join(t.TempDir(), "planted.json")
	os.WriteFile(elsewhere, []byte(`{"version":1,"values":{"ACME_TOKEN":"planted"}}`), 0o600)
	os.Remove(s.ValuesFile())
	if err := os.Symlink(elsewhere, s.ValuesFile()); err != nil {
		t.Fatal(err)
	}
	if v, _, err := s.Get(ctx, "ACME_TOKEN"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Get through a planted link = %q, %v", v, err)
	}
}

// A file of another user is refused: run as root, make the store's
// directory belong to nobody.
func TestRefusesAnotherUsersStore(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file ownership by uid on Windows")
	}
	testkit.NeedRoot(t, "to give a file to another user")
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(s.ValuesFile(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "ACME_TOKEN"); err == nil || !strings.Contains(err.Error(), "another user") {
		t.Fatalf("Get of a file owned by nobody: %v", err)
	}
	// And nobody cannot read what root stored.
	os.Chown(s.ValuesFile(), 0, 0)
	if _, err := exec.LookPath("setpriv"); err != nil {
		return
	}
	os.Chmod(filepath.Dir(s.Dir()), 0o755)
	out, err := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", s.ValuesFile()).CombinedOutput()
	if err == nil || strings.Contains(string(out), value) {
		t.Fatalf("another user read values.json: %s", out)
	}
}

// Concurrent Sets from many goroutines keep every name: the lock
// serializes the read-modify-write of both files.
func TestConcurrentSets(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	var wg sync.WaitGroup
	names := []string{"A", "B", "C", "D", "E", "F", "G", "H"}
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := Open(s.Dir(), nil).Set(ctx, n, "v-"+n, File); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, n := range names {
		if v, _, err := s.Get(ctx, n); err != nil || v != "v-"+n {
			t.Errorf("Get(%s) = %q, %v", n, v, err)
		}
	}
}

func TestDamagedFilesDoNotLeakValues(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	// Cut values.json in the middle of the value: the error must not
	// quote what it read.
	data, _ := os.ReadFile(s.ValuesFile())
	cut := strings.Index(string(data), value) + 5
	os.WriteFile(s.ValuesFile(), data[:cut], 0o600)
	_, _, err := s.Get(ctx, "ACME_TOKEN")
	if err == nil || !strings.Contains(err.Error(), "damaged") || strings.Contains(err.Error(), value[:5]) {
		t.Fatalf("Get of a damaged file: %v", err)
	}
	// The index alone still answers Where and List: they never read values.
	if b, ok, err := s.Where("ACME_TOKEN"); !ok || b != File || err != nil {
		t.Fatalf("Where with damaged values = %q, %v, %v", b, ok, err)
	}
}

// The keychain path against a real Secret Service (gnome-keyring on a
// private D-Bus session bus).
func TestKeychainBackend(t *testing.T) {
	svc := keyringtest.Start(t)
	for _, kv := range svc.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	s := newStore(t)
	res, err := s.Set(ctx, "ACME_TOKEN", value, "")
	if err != nil || res.Backend != Keychain || res.Fallback != nil {
		t.Fatalf("Set = %+v, %v", res, err)
	}
	if v, b, err := s.Get(ctx, "ACME_TOKEN"); err != nil || v != value || b != Keychain {
		t.Fatalf("Get = %q, %q, %v", v, b, err)
	}
	// The value is in the keychain, not in any file of the store.
	filepath.WalkDir(filepath.Dir(s.Dir()), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); strings.Contains(string(data), value) {
				t.Errorf("%s holds the value", p)
			}
		}
		return nil
	})
	// Two stores (two BERTH_HOMEs) do not share a secret.
	other := newStore(t)
	if _, err := other.Set(ctx, "ACME_TOKEN", "other-home", Keychain); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := s.Get(ctx, "ACME_TOKEN"); v != value {
		t.Fatalf("another store's Set changed this one: %q", v)
	}
	// Moving a secret to the file removes it from the keychain.
	if res, err := s.Set(ctx, "ACME_TOKEN", "in-file", File); err != nil || res.Backend != File {
		t.Fatalf("Set to file = %+v, %v", res, err)
	}
	if _, err := s.keychain(ctx, func() (string, error) { return keyringGet(s, "ACME_TOKEN") }); err == nil {
		t.Fatal("the keychain still holds the value after it moved to the file")
	}
	if _, err := s.Set(ctx, "ACME_TOKEN", value, Keychain); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Remove(ctx, "ACME_TOKEN"); err != nil || b != Keychain {
		t.Fatalf("Remove = %q, %v", b, err)
	}
	if _, err := s.keychain(ctx, func() (string, error) { return keyringGet(s, "ACME_TOKEN") }); err == nil {
		t.Fatal("the keychain still holds the value after Remove")
	}
}

func keyringGet(s *Store, name string) (string, error) { return keyring.Get(s.service, name) }

// A key given twice is refused, not read as whichever one a JSON reader
// keeps: the error names the file, the key and the fix, never a value.
func TestRefusesDuplicateKeys(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if _, err := s.Set(ctx, "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	index := s.indexFile()
	data, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(index, append([]byte(`{"version": 1, "VERSION": 1,`), data[1:]...), 0o600)
	_, _, err = s.Where("ACME_TOKEN")
	if err == nil || !strings.Contains(err.Error(), index) || !strings.Contains(err.Error(), `"version" and "VERSION" differ only in letter case`) || !strings.Contains(err.Error(), "move it aside") {
		t.Fatalf("Where with a key twice in index.json: %v", err)
	}
	os.WriteFile(index, data, 0o600)

	other := "other-" + value
	os.WriteFile(s.ValuesFile(), []byte(`{"version": 1, "values": {"ACME_TOKEN": "`+value+`", "ACME_TOKEN": "`+other+`"}}`), 0o600)
	_, _, err = s.Get(ctx, "ACME_TOKEN")
	if err == nil || !strings.Contains(err.Error(), s.ValuesFile()) || !strings.Contains(err.Error(), `values.ACME_TOKEN: the key "ACME_TOKEN" appears more than once`) ||
		!strings.Contains(err.Error(), "move it aside") || strings.Contains(err.Error(), value[:5]) {
		t.Fatalf("Get with a name twice in values.json: %v", err)
	}
}

// A lock not taken says why, never "<nil>".
func TestLockErrorKeepsTheCause(t *testing.T) {
	s := newStore(t)
	if _, err := s.Set(context.Background(), "ACME_TOKEN", value, File); err != nil {
		t.Fatal(err)
	}
	unlock, err := s.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = s.Set(ctx, "OTHER_TOKEN", value, File)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "waiting for the lock of the secret store") || strings.Contains(err.Error(), "<nil>") {
		t.Fatalf("Set while the lock is held: %v", err)
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	set := func(v string) func(string, bool) (string, bool, error) {
		return func(old string, had bool) (string, bool, error) { return v, false, nil }
	}
	if err := s.Update(ctx, "TOK", File, []Binding{{Plugin: "acme"}}, set("one")); err != nil {
		t.Fatal(err)
	}
	var seen string
	if err := s.Update(ctx, "TOK", File, nil, func(old string, had bool) (string, bool, error) {
		seen = old
		return "", false, nil // keep
	}); err != nil || seen != "one" {
		t.Fatalf("Update saw %q, %v", seen, err)
	}
	if e, ok, _ := s.Lookup("TOK"); !ok || !e.Binds("acme", "") {
		t.Fatalf("kept record %+v", e)
	}
	if err := s.Update(ctx, "TOK", File, nil, func(string, bool) (string, bool, error) { return "", true, nil }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Lookup("TOK"); ok {
		t.Fatal("not removed")
	}
}
