package cli

import (
	"strings"

	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// crashEnv names the test-only variable that makes berth SIGKILL itself at
// a named step of a state change, for the crash-safety tests.
const crashEnv = "BERTH_TEST_CRASH_AT"

// paths are the paths of the state under $BERTH_HOME, which must be the
// operator's alone (store.Paths.CheckPrivate) before berth reads or writes
// anything in it.
func (a *app) paths() (store.Paths, error) {
	p, err := store.NewPaths(store.DefaultRoot(a.getenv))
	if err != nil {
		return store.Paths{}, err
	}
	if err := p.CheckPrivate(); err != nil {
		return store.Paths{}, err
	}
	return p, nil
}

// store opens the state store under $BERTH_HOME.
func (a *app) store() (*store.Store, error) {
	paths, err := a.paths()
	if err != nil {
		return nil, err
	}
	opts := &store.StoreOptions{}
	if step := a.getenv(crashEnv); step != "" {
		opts.CrashHookUnsafe = func(s string) {
			if s == step {
				crash()
			}
		}
	}
	return store.Open(paths, opts), nil
}

// verifier builds the signer policy of config.json.
func (a *app) verifier(s *store.Store) (*trust.Verifier, error) {
	signers, err := s.Signers()
	if err != nil {
		return nil, err
	}
	return trust.NewVerifier(signers, nil)
}

// parseRef splits NAME[@VERSION].
func parseRef(ref string) (name, version string, err error) {
	name, version, _ = strings.Cut(ref, "@")
	if err := store.CheckRef(name, version); err != nil {
		return "", "", usagef("%v", err)
	}
	return name, version, nil
}
