package review

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/berth-mcp/berth/fetched"
)

// FetchedTree is what the review says of a runtime-fetched server's tree,
// resolved at trust (fetched.Lock): it is staged with the bundle and the
// server starts from it offline.
type FetchedTree struct {
	Server  string `json:"server"`
	Package string `json:"package"`
	// Packages is how many packages the tree holds; Files and Size its
	// files and their bytes.
	Packages int   `json:"packages"`
	Files    int   `json:"files"`
	Size     int64 `json:"size"`
	// Lock is the lock's digest (fetched.Lock.Digest), Tree the staged
	// tree's.
	Lock string `json:"lock"`
	Tree string `json:"tree"`
	// Registry is where it was resolved from.
	Registry string `json:"registry"`
	// Scripts are the packages whose install scripts ran, confined,
	// because the operator allowed them by name.
	Scripts []string `json:"scripts,omitempty"`
}

// Fetched is the review of the resolved trees.
func Fetched(locks []*fetched.Lock) []FetchedTree {
	out := []FetchedTree{}
	for _, l := range locks {
		if l == nil {
			continue
		}
		t := FetchedTree{Server: l.Server, Package: l.Package, Packages: len(l.Packages), Files: l.Files, Size: l.Size, Lock: l.Digest(), Tree: l.Tree, Registry: fetched.RedactURL(l.Registry)}
		for _, p := range l.Packages {
			if p.Scripts {
				t.Scripts = append(t.Scripts, p.Name+"@"+p.Version)
			}
		}
		out = append(out, t)
	}
	return out
}

// WriteFetched writes one line per resolved tree:
//
//	fetched  <server>: <pkg>: N packages, X MB, lock sha256:…; staged at trust, starts offline
func WriteFetched(w io.Writer, locks []*fetched.Lock) error {
	for _, t := range Fetched(locks) {
		if _, err := fmt.Fprintf(w, "fetched  %s: %s: %d %s, %s, lock %s; staged at trust, starts offline (from %s)\n",
			Printable(t.Server), Printable(t.Package), t.Packages, plural(t.Packages, "package", "packages"), megabytes(t.Size), t.Lock, Printable(t.Registry)); err != nil {
			return err
		}
		if len(t.Scripts) > 0 {
			if _, err := fmt.Fprintf(w, "         install scripts ran, confined (allowed by name): %s\n", Printable(strings.Join(t.Scripts, ", "))); err != nil {
				return err
			}
		}
	}
	return nil
}

func plural(n int, one, more string) string {
	if n == 1 {
		return one
	}
	return more
}

func megabytes(n int64) string {
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// PackageChange is one package that an upgrade adds, removes or changes
// the version of, in one server's tree.
type PackageChange struct {
	Server string `json:"server"`
	Name   string `json:"name"`
	// From is "" for an added package, To "" for a removed one.
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// FetchedChanges compares the trees of two versions, server by server:
// every package (by name) added, removed or at another version. A
// package installed at several versions is compared as the sorted list of
// its versions.
func FetchedChanges(from, to []*fetched.Lock) []PackageChange {
	out := []PackageChange{}
	servers := map[string][2]*fetched.Lock{}
	for _, l := range from {
		if l != nil {
			p := servers[l.Server]
			p[0] = l
			servers[l.Server] = p
		}
	}
	for _, l := range to {
		if l != nil {
			p := servers[l.Server]
			p[1] = l
			servers[l.Server] = p
		}
	}
	names := make([]string, 0, len(servers))
	for s := range servers {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		pair := servers[s]
		a, b := versionsOf(pair[0]), versionsOf(pair[1])
		var pkgs []string
		for n := range a {
			pkgs = append(pkgs, n)
		}
		for n := range b {
			if _, ok := a[n]; !ok {
				pkgs = append(pkgs, n)
			}
		}
		slices.Sort(pkgs)
		for _, n := range pkgs {
			if a[n] != b[n] {
				out = append(out, PackageChange{Server: s, Name: n, From: a[n], To: b[n]})
			}
		}
	}
	return out
}

func versionsOf(l *fetched.Lock) map[string]string {
	m := map[string][]string{}
	if l != nil {
		for _, p := range l.Packages {
			m[p.Name] = append(m[p.Name], p.Version)
		}
	}
	out := map[string]string{}
	for n, vs := range m {
		slices.Sort(vs)
		out[n] = strings.Join(slices.Compact(vs), ", ")
	}
	return out
}

// WriteFetchedChanges writes the package changes, one per line, or
// nothing when there are none.
func WriteFetchedChanges(w io.Writer, changes []PackageChange) error {
	for _, c := range changes {
		var line string
		switch {
		case c.From == "":
			line = fmt.Sprintf("  fetched %s: + %s %s (added)", c.Server, c.Name, c.To)
		case c.To == "":
			line = fmt.Sprintf("  fetched %s: - %s %s (removed)", c.Server, c.Name, c.From)
		default:
			line = fmt.Sprintf("  fetched %s: ~ %s %s -> %s", c.Server, c.Name, c.From, c.To)
		}
		if _, err := fmt.Fprintln(w, Printable(line)); err != nil {
			return err
		}
	}
	return nil
}
