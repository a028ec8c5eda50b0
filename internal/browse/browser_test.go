package browse

import (
	"context"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/berth-mcp/berth/internal/testkit"
	"github.com/berth-mcp/berth/marketplace"
)

// The browser tests drive a real headless Chromium (Debian's chromium
// package) with chromedp. Without one they skip, unless
// BERTH_REQUIRE_BROWSER=1 (as .ci/run sets), when they fail.

var screenshots = flag.String("screenshots", "", "write the browser tests' screenshots to this `DIR` (docs/img keeps the ones docs/marketplace.md shows)")

const requireBrowserEnv = "BERTH_REQUIRE_BROWSER"

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium on PATH (install Debian's package: apt-get install -y chromium)"
	if os.Getenv(requireBrowserEnv) == "1" {
		t.Fatalf("%s; %s=1 makes the browser tests mandatory", msg, requireBrowserEnv)
	}
	// "real-peer: " lets make test's summary (internal/testsummary) count it.
	t.Skipf("real-peer: %s; set %s=1 to make this a failure", msg, requireBrowserEnv)
	return ""
}

// browser is one Chromium with a fresh profile, and what it saw: every
// request and every console error.
type browser struct {
	t        *testing.T
	ctx      context.Context
	mu       sync.Mutex
	requests []string
	errors   []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-features", "Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("font-render-hinting", "none"),
		chromedp.WindowSize(1280, 900),
	}
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	b := &browser{t: t}
	ctx, cancel2 := chromedp.NewContext(actx, chromedp.WithListener(b.event))
	t.Cleanup(cancel2)
	b.ctx = ctx
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatal(err)
	}
	return b
}

func (b *browser) event(ev any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		b.requests = append(b.requests, ev.Request.URL)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
			var args []string
			for _, a := range ev.Args {
				args = append(args, a.Description+fmt.Sprint(a.Value))
			}
			b.errors = append(b.errors, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		b.errors = append(b.errors, "exception: "+msg)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
			b.errors = append(b.errors, fmt.Sprintf("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
		}
	}
}

func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

func value[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *browser) eval(js string) {
	b.t.Helper()
	value(b, chromedp.Evaluate[chromedp.Void](js))
}

func call[P any](cmd cdp.Command[P, cdp.Empty], params P) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, cmd, params)
		return err
	})
}

// check fails on any console error and on any request outside origin.
func (b *browser) check(origin string) {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, e := range b.errors {
		b.t.Errorf("the page logged an error: %s", e)
	}
	if len(b.requests) == 0 {
		b.t.Error("no requests were seen: the network listener is not working")
	}
	for _, u := range b.requests {
		if !strings.HasPrefix(u, origin) {
			b.t.Errorf("a request left the page's origin %s: %s", origin, u)
		}
	}
}

// visibleKeys are the cards shown, in order.
func (b *browser) visibleKeys() []string {
	return value(b, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#cards li.card')).filter(li => !li.hidden).map(li => li.dataset.key)`))
}

// waitKeys waits until the cards shown are want.
func (b *browser) waitKeys(what string, want []string) {
	b.t.Helper()
	var got []string
	if !testkit.Within(10*time.Second, func() bool { got = b.visibleKeys(); return slices.Equal(got, want) }) {
		b.t.Fatalf("%s: the page shows %v, want %v", what, got, want)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return value(b, chromedp.Text(chromedp.CSS(sel)))
}

// shoot saves a full-page screenshot at width w, in the light or dark
// scheme, into -screenshots DIR (or the test's temporary directory).
func (b *browser) shoot(name string, w int64, dark bool) {
	b.t.Helper()
	dir := *screenshots
	if dir == "" {
		dir = b.t.TempDir()
	}
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	b.do(
		call(emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: w, Height: 800, DeviceScaleFactor: 1, Mobile: w < 600}),
		call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}),
		chromedp.Sleep(150*time.Millisecond),
	)
	png := value(b, chromedp.FullScreenshot(100))
	b.do(call(emulation.ClearDeviceMetricsOverride, cdp.Empty{}), call(emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}))
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		b.t.Fatalf("screenshot %s is not a PNG", name)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func ranked(t *testing.T, f *fixture, q string) []string {
	t.Helper()
	found, err := f.cache.Search(marketplace.Query{Text: q}, &marketplace.ResolveOptions{Now: f.clk.now()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range found.Results {
		out = append(out, r.Catalog+"/"+r.Name)
	}
	return out
}

// typeQuery replaces the search text by typing it, as a person does.
func (b *browser) typeQuery(q string) {
	b.t.Helper()
	b.do(chromedp.Focus(chromedp.ID("q")))
	b.eval(`document.getElementById('q').select()`)
	b.do(chromedp.KeyEvent("\b"))
	if q != "" {
		b.do(chromedp.SendKeys(chromedp.ID("q"), q))
	}
}

// choose picks an option of a filter and fires its change event.
func (b *browser) choose(id, value string) {
	b.t.Helper()
	b.do(chromedp.SetValue(chromedp.ID(id), value))
	b.eval(`document.getElementById("` + id + `").dispatchEvent(new Event('change'))`)
}

// walk is the same visit of the served page and of the export: the index,
// typed searches, a tier filter, a plugin page, its disclosure and install
// command, keyboard focus, screenshots.
func walk(t *testing.T, f *fixture, b *browser, start, shots string) {
	all := ranked(t, f, "")
	b.do(chromedp.Navigate(start), chromedp.WaitVisible(chromedp.ID("q")))
	if got := b.visibleKeys(); !slices.Equal(got, all) {
		t.Fatalf("the index lists %v, want %v", got, all)
	}
	if shots != "" {
		b.shoot(shots+"-index-1280", 1280, false)
		b.shoot(shots+"-index-390", 390, false)
		b.shoot(shots+"-index-1280-dark", 1280, true)
	}
	// The first Tab reaches the skip link; the search box is labelled.
	b.do(chromedp.KeyEvent("\t"))
	focused := value(b, chromedp.Evaluate[string](`document.activeElement.className`))
	label := value(b, chromedp.Evaluate[string](`document.querySelector('label[for=q]').textContent`))
	if focused != "skip" || label != "Search plugins" {
		t.Errorf("keyboard: first Tab focuses %q; the search box's label is %q", focused, label)
	}
	for _, q := range []string{"cloud", "notes", "acme notes", "format", "zzz", "reference", "acme"} {
		b.typeQuery(q)
		b.waitKeys("typing "+q, ranked(t, f, q))
		if q == "zzz" {
			if got := b.text("#empty"); !strings.Contains(got, "Try fewer or shorter words") || !strings.Contains(got, "“zzz”") {
				t.Errorf("no empty state: %q", got)
			}
		}
	}
	b.typeQuery("")
	b.waitKeys("clearing the search", all)
	b.choose("f-tier", "official")
	b.waitKeys("tier official", []string{"acme/acme-cloud", "acme/everything"})
	b.choose("f-tier", "verified")
	b.waitKeys("tier verified", []string{"acme/acme-notes"})
	if got := b.text("#count"); !strings.HasPrefix(got, "1 of 7 plugins in 2 catalogs") {
		t.Errorf("count: %q", got)
	}
	// Open the plugin page from its card.
	b.do(chromedp.Click(chromedp.CSS(`li.card[data-key="acme/acme-notes"] h2 a`)), chromedp.WaitVisible(chromedp.ID("install-cmd")))
	if got := b.text("#install-cmd"); got != "berth install acme-notes@^1.2 --catalog acme --enable" {
		t.Errorf("install command %q", got)
	}
	page := b.text("main")
	p, ci, _ := f.cache.Plugin("acme", "acme-notes")
	sh, _ := marketplace.Show(p, ci, "", &marketplace.ResolveOptions{Now: f.clk.now()})
	for _, l := range sh.Review.Lines() {
		if !strings.Contains(page, strings.TrimSpace(l.Text)) {
			t.Errorf("the plugin page lacks the review line %q", l.Text)
		}
	}
	for _, w := range []string{sh.ReviewHeading(), sh.ToolsHeading(), "search_purge", "destructive", "read-only", "it lost notes with a colon in their name", "skipped: yanked"} {
		if !strings.Contains(page, w) {
			t.Errorf("the plugin page lacks %q", w)
		}
	}
	if shots != "" {
		b.shoot(shots+"-plugin-1280", 1280, false)
		b.shoot(shots+"-plugin-390", 390, false)
		b.shoot(shots+"-plugin-1280-dark", 1280, true)
	}
	// Another version, then back to the index by the navigation.
	b.do(chromedp.Click(chromedp.CSS(`a[href$="acme-notes@1.1.0"], a[href$="acme-notes@1.1.0.html"]`)), chromedp.WaitVisible(chromedp.CSS(`a[aria-current="page"][href*="1.1.0"]`)))
	if got := b.text(".review .lead"); !strings.Contains(got, "Review of 1.1.0") {
		t.Errorf("version page: %q", got)
	}
	b.do(chromedp.Click(chromedp.CSS(`header nav a`)), chromedp.WaitVisible(chromedp.ID("q")))
	b.do(chromedp.Click(chromedp.CSS(`header nav a + a`)), chromedp.WaitVisible(chromedp.CSS("section.catalog")))
	if got := b.text("main"); !strings.Contains(got, "TUF versions") || !strings.Contains(got, "stale since") {
		t.Errorf("catalogs page: %.200q", got)
	}
}

func TestBrowserServed(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t)
	// As berth marketplace serve serves it: the start URL's token sets the
	// cookie that every later page, script and style sheet needs.
	token := NewToken()
	srv := httptest.NewServer(f.site().HandlerWithToken(token))
	defer srv.Close()
	b.do(chromedp.Navigate(srv.URL+"/?token="+token), chromedp.WaitVisible(chromedp.ID("q")))
	if got := value(b, chromedp.Evaluate[string](`location.href`)); got != srv.URL+"/" {
		t.Errorf("after the start URL the browser is at %s, want the URL without the token", got)
	}
	walk(t, f, b, srv.URL+"/", "served")
	// Without JavaScript the form submits and the server ranks.
	b.do(chromedp.Navigate(srv.URL+"/?q=notes&tier=community"), chromedp.WaitVisible(chromedp.ID("cards")))
	want := []string{}
	for _, k := range ranked(t, f, "notes") {
		if k == "beta/acme-notes" || k == "acme/old-sync" {
			want = append(want, k)
		}
	}
	if got := b.visibleKeys(); !slices.Equal(got, want) {
		t.Errorf("?q=notes&tier=community: %v, want %v", got, want)
	}
	b.check(srv.URL + "/")
}

func TestBrowserExport(t *testing.T) {
	b := newBrowser(t)
	f := newFixture(t)
	dir := filepath.Join(t.TempDir(), "site")
	if _, err := f.site().Export(f.ctx, dir, nil); err != nil {
		t.Fatal(err)
	}
	walk(t, f, b, "file://"+dir+"/index.html", "export")
	// A tag link from a plugin page lands on the filtered index.
	b.do(chromedp.Navigate("file://"+dir+"/plugins/acme/acme-cloud.html"), chromedp.WaitVisible(chromedp.ID("install-cmd")),
		chromedp.Click(chromedp.CSS(`.plugin-head .badge.tag a`)), chromedp.WaitVisible(chromedp.ID("q")))
	b.waitKeys("tag link", []string{"acme/acme-cloud", "acme/acme-notes", "beta/acme-notes", "acme/old-sync"})
	b.check("file://" + dir + "/")
}
