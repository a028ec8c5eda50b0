package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/marketplace"
	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/marketplace/repo"
	"github.com/berth-mcp/berth/mcpexport"
	"github.com/berth-mcp/berth/secrets"
)

// TestServeHintsKeepTheText: the library's limit errors name no flag;
// berth serve's Hints turn them into the text its clients saw before.
func TestServeHintsKeepTheText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&mcpexport.PendingLimitError{PerSession: true, Max: 16, Raise: serveHints.MaxPendingPerSession, Settle: serveHints.Approvals},
			"this session already has 16 calls waiting for approval, the most it may have (berth serve --max-pending-per-session): too many calls wait for approval; settle them (berth approvals) or let them time out first"},
		{&mcpexport.PendingLimitError{Max: 256, Raise: serveHints.MaxPending, Settle: serveHints.Approvals},
			"256 calls already wait for approval on this berth serve, the most it allows (berth serve --max-pending): too many calls wait for approval; settle them (berth approvals) or let them time out first"},
		{&mcpexport.SessionLimitError{Max: 256, Raise: serveHints.MaxSessions},
			"this listener has 256 sessions, all busy (the limit, --max-sessions)"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestForCLIKeepsTheText: library errors that name no flag are worded by
// forCLI with berth's flags, as the CLI printed them before, and still
// unwrap to the library's error.
func TestForCLIKeepsTheText(t *testing.T) {
	kerr := errors.New("keychain says no")
	for _, c := range []struct {
		err  error
		want string
	}{
		{&secrets.KeychainError{Name: "TOKEN", Size: 9000, TooBig: true, Err: kerr},
			"the keychain refuses a value of 9000 bytes for TOKEN; keep it in the file with --store file: keychain says no"},
		{&secrets.KeychainError{Name: "TOKEN", Err: kerr},
			"storing TOKEN in the keychain: keychain says no; nothing was stored (--store file keeps it in a file only you can read)"},
		{&marketplace.VerifyError{Catalog: "acme", Kind: marketplace.KindRootPin, File: "1.root.json", Detail: "the source's 1.root.json has sha256 ab, but you pinned cd", First: true},
			"untrusted: catalog acme refused (root-pin) at 1.root.json: the source's 1.root.json has sha256 ab, but you pinned cd\nNothing was added. Get the root's sha256 (berth catalog init prints it) or the root.json file from the curator over a channel you trust, and add the catalog with it: berth marketplace add NAME SOURCE --root-sha256 HEX (or --root FILE)."},
		{&marketplace.NoCatalogError{Name: "acme"},
			"no such catalog: there is no catalog acme; add it with berth marketplace add acme SOURCE --root-sha256 HEX (berth marketplace list shows the ones you have)"},
		{&repo.NotCatalogError{Dir: "/c", File: "catalog.json"},
			"/c is not a berth catalog (it has no catalog.json); make one with berth catalog init /c --keys KEYDIR"},
		{&repo.ReadmeError{Source: "./p", Size: 300000},
			fmt.Sprintf("./p: README.md is 300000 bytes, over the %d a catalog carries; shorten it, or leave it out (berth catalog add --no-readme)", catalog.MaxReadme)},
		{&repo.ReadmeError{Source: "./p", NotUTF8: true},
			"./p: README.md is not UTF-8 text; convert it, or leave it out (berth catalog add --no-readme)"},
	} {
		got := forCLI(c.err)
		if got.Error() != c.want {
			t.Errorf("got  %q\nwant %q", got.Error(), c.want)
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%q does not unwrap to the library's error", got.Error())
		}
		if lib := c.err.Error(); strings.Contains(lib, "--") {
			t.Errorf("the library's text names a flag: %q", lib)
		}
	}
}
