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
func CheckSummary(name string, v *catalog.Version, d *review.Disclosure) error {
	got := catalog.NewSummary(d)
	want := v.Summary
	var diffs []string
	diffJSON(&diffs, "files", want.Files, got.Files)
	byName := func(ss []catalog.SummaryServer) map[string]catalog.SummaryServer {
		m := map[string]catalog.SummaryServer{}
		for _, s := range ss {
			m[s.Name] = s
		}
		return m
	}
	ws, gs := byName(want.Servers), byName(got.Servers)
	for _, n := range unionKeys(ws, gs) {
		w, inW := ws[n]
		g, inG := gs[n]
		switch {
		case !inW:
			diffs = append(diffs, fmt.Sprintf("server %q: the catalog does not list it, the bundle has it", n))
		case !inG:
			diffs = append(diffs, fmt.Sprintf("server %q: the catalog lists it, the bundle does not have it", n))
		default:
			diffJSON(&diffs, fmt.Sprintf("server %q", n), w, g)
		}
	}
	wn, gn := map[string]catalog.SummaryNativeTool{}, map[string]catalog.SummaryNativeTool{}
	for _, t := range want.NativeTools {
		wn[t.Name] = t
	}
	for _, t := range got.NativeTools {
		gn[t.Name] = t
	}
	for _, n := range unionKeys(wn, gn) {
		w, inW := wn[n]
		g, inG := gn[n]
		switch {
		case !inW:
			diffs = append(diffs, fmt.Sprintf("native tool %q: the catalog does not list it, the bundle has it", n))
		case !inG:
			diffs = append(diffs, fmt.Sprintf("native tool %q: the catalog lists it, the bundle does not have it", n))
		default:
			diffJSON(&diffs, fmt.Sprintf("native tool %q", n), w, g)
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return &SummaryMismatchError{Plugin: name, Version: v.Version, Differences: diffs}
}

func unionKeys[V any](a, b map[string]V) []string {
	keys := append(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// diffJSON compares two values through their JSON forms and appends one
// line per leaf that differs.
func diffJSON(diffs *[]string, prefix string, want, got any) {
	var w, g any
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	json.Unmarshal(wb, &w)
	json.Unmarshal(gb, &g)
	diffValue(diffs, prefix, w, g)
}

func diffValue(diffs *[]string, p string, w, g any) {
	if reflect.DeepEqual(w, g) {
		return
	}
	wm, ok1 := w.(map[string]any)
	gm, ok2 := g.(map[string]any)
	if ok1 && ok2 {
		for _, k := range unionKeys(wm, gm) {
			diffValue(diffs, p+"."+k, wm[k], gm[k])
		}
		return
	}
	*diffs = append(*diffs, fmt.Sprintf("%s: the catalog says %s, the bundle has %s", p, show(w), show(g)))
}

func show(v any) string {
	if v == nil {
		return "nothing"
	}
	b, _ := json.Marshal(v)
	return review.Printable(string(b))
}
