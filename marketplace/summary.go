package marketplace

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/marketplace/catalog"
	"github.com/berth-mcp/berth/review"
	"github.com/berth-mcp/berth/store"
	"github.com/berth-mcp/berth/trust"
)

// SummaryMismatchError is returned by CheckSummary when the review of the
// real bundle differs from the catalog's summary: the catalog says one
// thing about what the plugin may do and the bundle another. It wraps
// trust.ErrUntrusted (exit 4).
type SummaryMismatchError struct {
	Plugin, Version string
	// Differences are "path: the catalog says X, the bundle has Y" lines.
	Differences []string
}

func (e *SummaryMismatchError) Error() string {
	return fmt.Sprintf("%v: the catalog's review summary of %s@%s differs from the review of the bundle itself, so the catalog misstates what the plugin may do:\n  %s\nberth refuses it; tell the catalog's curator (berth show %s@%s shows what the catalog claims, berth review on the bundle what it asks for)",
		trust.ErrUntrusted, e.Plugin, e.Version, strings.Join(e.Differences, "\n  "), e.Plugin, e.Version)
}

func (e *SummaryMismatchError) Unwrap() error { return trust.ErrUntrusted }

// CheckSummary compares a catalog version's summary with the review of
// the bundle that was downloaded for it: files, servers and native tools
// must be equal. The curator's tool list is not compared (the bundle does
// not carry one). The error is a *SummaryMismatchError listing every
// difference.
//
// A summary that does not state a server's or provider's sandbox (written
// before berth stated it) is not refused for that: the sandbox is "not
// stated", and the review at install shows it. A summary that states one
// must state the bundle's exactly.
func CheckSummary(name string, v *catalog.Version, d *review.Disclosure) error {
	got := catalog.NewSummary(d)
	want := v.Summary
	unstated(&got, &want)
	var diffs []string
	diffJSON(&diffs, bundleWords, "files", want.Files, got.Files)
	serverName := func(s catalog.SummaryServer) string { return s.Name }
	diffByName(&diffs, bundleWords, "server", indexBy(want.Servers, serverName), indexBy(got.Servers, serverName))
	toolName := func(t catalog.SummaryNativeTool) string { return t.Name }
	diffByName(&diffs, bundleWords, "native tool", indexBy(want.NativeTools, toolName), indexBy(got.NativeTools, toolName))
	if len(diffs) == 0 {
		return nil
	}
	return &SummaryMismatchError{Plugin: name, Version: v.Version, Differences: diffs}
}

// unstated leaves out of got the sandboxes that want does not state, so
// that a summary written before berth stated them is not refused for
// that. got is the caller's own copy.
func unstated(got, want *catalog.Summary) {
	stated := map[string]bool{}
	for _, s := range want.Servers {
		stated["server "+s.Name] = s.Sandbox != nil
	}
	for _, nt := range want.NativeTools {
		stated["native "+nt.Name] = nt.Sandbox != nil
	}
	for i := range got.Servers {
		if !stated["server "+got.Servers[i].Name] {
			got.Servers[i].Sandbox = nil
		}
	}
	for i := range got.NativeTools {
		if !stated["native "+got.NativeTools[i].Name] {
			got.NativeTools[i].Sandbox = nil
		}
	}
}

// summaryChanges lists how a published version's summary (was) and the
// one a catalog lists now differ: in what install checks against the
// bundle (files, servers and native tools) and in the tools the curator
// lists, which upgrade compares with the list recorded at install.
func summaryChanges(was, now *catalog.Summary) []string {
	if reflect.DeepEqual(was.Files, now.Files) && reflect.DeepEqual(was.Servers, now.Servers) && reflect.DeepEqual(was.NativeTools, now.NativeTools) &&
		(len(was.Tools) == 0 && len(now.Tools) == 0 || reflect.DeepEqual(was.Tools, now.Tools)) {
		return nil
	}
	var diffs []string
	diffJSON(&diffs, publishedWords, "files", was.Files, now.Files)
	serverName := func(s catalog.SummaryServer) string { return s.Name }
	diffByName(&diffs, publishedWords, "server", indexBy(was.Servers, serverName), indexBy(now.Servers, serverName))
	toolName := func(t catalog.SummaryNativeTool) string { return t.Name }
	diffByName(&diffs, publishedWords, "native tool", indexBy(was.NativeTools, toolName), indexBy(now.NativeTools, toolName))
	diffTools(&diffs, publishedWords, was.Tools, now.Tools)
	return diffs
}

// diffTools adds to diffs how two tool lists of the curator's differ,
// matched by server and name as upgrade's diff names them
// ("server__name").
func diffTools(diffs *[]string, words diffWords, want, got []catalog.Tool) {
	diffByName(diffs, words, "tool", indexBy(want, toolKey), indexBy(got, toolKey))
}

func toolKey(t catalog.Tool) string { return t.Server + "__" + t.Name }

// InstalledTools is the tool list the catalog's curator gave r's version
// when it was installed (store.CatalogOrigin.Tools): upgrade's diff
// starts from it, never from what the catalog lists now. ok is false
// when r keeps none: trusted by hand, or installed by a berth that did
// not record it.
func InstalledTools(r *store.Record) (tools []catalog.Tool, ok bool, err error) {
	if r.Catalog == nil || r.Catalog.Tools == nil {
		return nil, false, nil
	}
	if err := json.Unmarshal(r.Catalog.Tools, &tools); err != nil {
		return nil, false, fmt.Errorf("the trust record of %s is damaged (the tool list its catalog gave it: %v); remove it and install the plugin again", r.ID(), err)
	}
	return tools, true, nil
}

// ToolListChanges lists how the tool list a catalog gave a version when
// it was installed (was, InstalledTools) and the one it lists now differ,
// one line per tool: a published version never changes, so upgrade
// reports it.
func ToolListChanges(was, now []catalog.Tool) []string {
	var diffs []string
	diffTools(&diffs, installedWords, was, now)
	return diffs
}

// recordedTools is what an install records of the tool list of v
// (store.CatalogOrigin.Tools): "[]" when the curator lists none.
func recordedTools(v *catalog.Version) json.RawMessage {
	tools := v.Summary.Tools
	if tools == nil {
		tools = []catalog.Tool{}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		panic(err) // plain structs always marshal
	}
	return b
}

// diffWords word the differences between two summaries: what each side
// is (want and got), with the item only in got, only in want, or a value
// that differs (two %s: want's, got's).
type diffWords struct{ onlyGot, onlyWant, value string }

var (
	// bundleWords compare a catalog's summary (want) with a bundle's (got).
	bundleWords = diffWords{
		onlyGot:  "the catalog does not list it, the bundle has it",
		onlyWant: "the catalog lists it, the bundle does not have it",
		value:    "the catalog says %s, the bundle has %s",
	}
	// publishedWords compare the summary a version was published with
	// (want) with the one the catalog lists now (got).
	publishedWords = diffWords{
		onlyGot:  "it was published without it, and is now listed with it",
		onlyWant: "it was published with it, and is now listed without it",
		value:    "it was published with %s, and is now listed with %s",
	}
	// installedWords compare the tool list a version was installed with
	// (want) with the one the catalog lists now (got).
	installedWords = diffWords{
		onlyGot:  "it was not listed when you installed the version, and is listed now",
		onlyWant: "it was listed when you installed the version, and is not listed now",
		value:    "it was listed with %s when you installed the version, and is now listed with %s",
	}
)

// indexBy maps the elements of xs by their names.
func indexBy[T any](xs []T, name func(T) string) map[string]T {
	m := make(map[string]T, len(xs))
	for _, x := range xs {
		m[name(x)] = x
	}
	return m
}

// diffByName adds to diffs how the items of one kind (what: "server",
// "native tool") of want and got (as words say) differ, matched by name.
func diffByName[T any](diffs *[]string, words diffWords, what string, want, got map[string]T) {
	for _, n := range unionKeys(want, got) {
		w, inW := want[n]
		g, inG := got[n]
		switch {
		case !inW:
			*diffs = append(*diffs, fmt.Sprintf("%s %q: %s", what, n, words.onlyGot))
		case !inG:
			*diffs = append(*diffs, fmt.Sprintf("%s %q: %s", what, n, words.onlyWant))
		default:
			diffJSON(diffs, words, fmt.Sprintf("%s %q", what, n), w, g)
		}
	}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := append(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// diffJSON compares two values through their JSON forms and appends one
// line per leaf that differs.
func diffJSON(diffs *[]string, words diffWords, prefix string, want, got any) {
	var w, g any
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	json.Unmarshal(wb, &w)
	json.Unmarshal(gb, &g)
	diffValue(diffs, words, prefix, w, g)
}

func diffValue(diffs *[]string, words diffWords, p string, w, g any) {
	if reflect.DeepEqual(w, g) {
		return
	}
	wm, ok1 := w.(map[string]any)
	gm, ok2 := g.(map[string]any)
	if ok1 && ok2 {
		for _, k := range unionKeys(wm, gm) {
			diffValue(diffs, words, p+"."+k, wm[k], gm[k])
		}
		return
	}
	*diffs = append(*diffs, p+": "+fmt.Sprintf(words.value, show(w), show(g)))
}

func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	return review.Printable(string(b))
}
