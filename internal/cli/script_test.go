package cli

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/berth-mcp/berth/sandbox"
	"github.com/rogpeppe/go-internal/testscript"
)

var updateScripts = flag.Bool("update", false, "update testscript golden output in place")

func TestMain(m *testing.M) {
	// A test binary re-executed as the sandbox launcher never runs tests.
	sandbox.Main()
	// A race-enabled berth would sleep a second at every exit; the many
	// berth processes these tests start need not.
	if os.Getenv("GORACE") == "" {
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	if os.Getenv(otherUserListenEnv) != "" {
		otherUserListen()
		return
	}
	if os.Getenv(otherUserGetEnv) != "" {
		otherUserGet()
		return
	}
	testscript.Main(m, map[string]func(){
		"berth": func() { useBuiltinFake(); os.Exit(Main()) },
	})
}

// TestScripts runs the CLI behaviour tests in testdata/script. Each script
// gets its own BERTH_HOME and working directory; $FIXTURES is the
// repository's testdata directory.
func TestScripts(t *testing.T) {
	fixtures, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *updateScripts,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("BERTH_HOME", filepath.Join(env.WorkDir, ".berth-home"))
			env.Setenv("GORACE", os.Getenv("GORACE"))
			// PATH_ONCE is PATH with each directory once, as connect records it.
			env.Setenv("PATH_ONCE", dedupePath(env.Getenv("PATH")))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exitcode":              exitcodeCmd,
			"serve":                 serveCmd,
			"serve-fail":            serveFailCmd,
			"serve-requests":        serveRequestsCmd,
			"typein":                typeinCmd,
			"interrupt":             interruptCmd,
			"serve-registry":        serveRegistryCmd,
			"serve-static-registry": serveStaticRegistryCmd,
			"http-get":              httpGetCmd,
			"oci-registry":          ociRegistryCmd,
			"oci-stats":             ociStatsCmd,
			"oci-tamper":            ociTamperCmd,
			"npmreg":                npmregCmd,
			"pyreg":                 pyregCmd,
			"builtin-entry":         builtinEntryCmd,
			"builtin-fake":          builtinFakeCmd,
		},
	})
}
