// Command claudetrees measures berth's Claude Code plugin importer on real
// plugin trees: every directory under DIR holding .claude-plugin/plugin.json
// is opened as berth import would, and it prints how many are valid
// bundles, the refusals by rule, the plugins refused for
// claude-plugin-remote-auth, and those valid with berth import --without
// their empty-url connectors. It exits 1 when a plugin is refused for plain
// oauth settings (issue 21) or cannot be read at all.
//
// The shared corpus holds the marketplaces' marketplace.json files only,
// not the plugins' trees, so this is a measurement run by hand on checkouts
// of marketplace repositories:
//
//	go run ./bench/claudetrees DIR
package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/berth-mcp/berth/bundle"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run ./bench/claudetrees DIR (a directory of Claude Code plugin trees)")
		os.Exit(2)
	}
	if run(os.Args[1]) {
		os.Exit(1)
	}
}

func run(root string) (failed bool) {
	errorf := func(format string, args ...any) {
		failed = true
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
	logf := func(format string, args ...any) { fmt.Printf(format+"\n", args...) }
	var dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) == "plugin.json" && filepath.Base(filepath.Dir(p)) == ".claude-plugin" {
			dirs = append(dirs, filepath.Dir(filepath.Dir(p)))
		}
		return nil
	})
	sort.Strings(dirs)
	byRule := map[string]int{}
	valid := 0
	var remoteAuth, onlyRemoteAuth, withOAuth, without, withoutOAuth []string
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		b, err := bundle.Open(context.Background(), dir, nil)
		if err == nil {
			valid++
			for _, s := range b.Manifest.MCPServers {
				if s.Remote != nil && s.Remote.Auth != nil && s.Remote.Auth.OAuth != nil {
					withOAuth = append(withOAuth, rel)
					break
				}
			}
			b.Close()
			continue
		}
		var ie *bundle.InvalidError
		if !errors.As(err, &ie) {
			errorf("%s: %v", rel, err)
			continue
		}
		rules := map[string]bool{}
		for _, p := range ie.Problems {
			rules[p.Rule] = true
			if p.Rule == bundle.RuleClaudeRemoteAuth && strings.HasSuffix(p.Path, ".oauth") {
				errorf("%s: plain oauth settings refused: %s", rel, p)
			}
		}
		for r := range rules {
			byRule[r]++
		}
		// A connector Claude Code fills in itself ("url": "") has no
		// endpoint; berth import --without leaves it out. Try the rest.
		var connectors []string
		for _, p := range ie.Problems {
			i := strings.Index(p.Path, "mcpServers")
			if p.Rule == bundle.RuleClaudeRequiredField && strings.HasSuffix(p.Path, ".url") && i >= 0 {
				name := strings.TrimSuffix(p.Path[i+len("mcpServers"):], ".url")
				name = strings.TrimPrefix(name, ".")
				if uq, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")); err == nil {
					name = uq
				}
				connectors = append(connectors, name)
			}
		}
		if len(connectors) > 0 {
			b, err := bundle.Open(context.Background(), dir, &bundle.Options{Without: connectors})
			if err == nil {
				without = append(without, rel)
				for _, s := range b.Manifest.MCPServers {
					if s.Remote != nil && s.Remote.Auth != nil && s.Remote.Auth.OAuth != nil {
						withoutOAuth = append(withoutOAuth, rel)
						break
					}
				}
				b.Close()
			} else if errors.As(err, &ie) {
				logf("%s --without %q: %v", rel, connectors, err)
				for _, p := range ie.Problems {
					rules["--without: "+p.Rule] = true
				}
			}
		}
		if rules[bundle.RuleClaudeRemoteAuth] {
			remoteAuth = append(remoteAuth, rel)
			if len(rules) == 1 {
				onlyRemoteAuth = append(onlyRemoteAuth, rel)
			}
		}
	}
	logf("%d plugin trees: %d valid bundles, %d of them signing in with OAuth", len(dirs), valid, len(withOAuth))
	rules := slices.Collect(func(yield func(string) bool) {
		for r := range byRule {
			if !yield(r) {
				return
			}
		}
	})
	sort.Slice(rules, func(i, j int) bool {
		return byRule[rules[i]] > byRule[rules[j]] || byRule[rules[i]] == byRule[rules[j]] && rules[i] < rules[j]
	})
	for _, r := range rules {
		logf("refused by %-36s %3d plugins", r, byRule[r])
	}
	logf("refused for claude-plugin-remote-auth: %d %v (for it alone: %d)", len(remoteAuth), remoteAuth, len(onlyRemoteAuth))
	logf("valid and signing in with OAuth: %v", withOAuth)
	logf("valid with berth import --without their empty-url connectors: %d, %d of them signing in with OAuth: %v", len(without), len(withoutOAuth), withoutOAuth)
	return failed
}
