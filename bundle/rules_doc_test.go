package bundle

import (
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ruleHeading is how docs/rules.md introduces a rule: ### `rule-id`.
var ruleHeading = regexp.MustCompile("(?m)^### `([^`]*)`[ \t]*$")

// TestRulesDocumented checks that docs/rules.md has exactly one section per
// rule of Rules, in the same order, and none for a rule that does not exist.
func TestRulesDocumented(t *testing.T) {
	data, err := os.ReadFile("../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	count := map[string]int{}
	for _, m := range ruleHeading.FindAllStringSubmatch(string(data), -1) {
		documented = append(documented, m[1])
		count[m[1]]++
	}
	known := map[string]bool{}
	var ids []string
	for _, r := range Rules() {
		known[r.ID] = true
		ids = append(ids, r.ID)
		if count[r.ID] == 0 {
			t.Errorf("rule %q (%s) has no \"### `%s`\" section in docs/rules.md", r.ID, r.Summary, r.ID)
		}
	}
	for _, id := range slices.Compact(slices.Sorted(slices.Values(documented))) {
		switch {
		case !known[id]:
			t.Errorf("docs/rules.md documents %q, which is not in bundle.Rules; remove the section or add the rule", id)
		case count[id] > 1:
			t.Errorf("docs/rules.md documents %q %d times", id, count[id])
		}
	}
	if !t.Failed() {
		for i := range ids {
			if documented[i] != ids[i] {
				t.Errorf("docs/rules.md lists the rules in another order than bundle.Rules: section %d is %q, Rules has %q", i+1, documented[i], ids[i])
				break
			}
		}
	}
}

var kebab = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// TestRulesComplete checks that every Rule* constant of rules.go is in
// Rules once, with a kebab-case ID and a summary.
func TestRulesComplete(t *testing.T) {
	f, err := goparser.ParseFile(token.NewFileSet(), "rules.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !strings.HasPrefix(n.Name, "Rule") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					consts[v] = n.Name
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("Rules lists %q twice", r.ID)
		}
		seen[r.ID] = true
		if !kebab.MatchString(r.ID) {
			t.Errorf("rule ID %q is not kebab-case", r.ID)
		}
		if strings.TrimSpace(r.Summary) == "" {
			t.Errorf("rule %q has no summary", r.ID)
		}
	}
	for id, name := range consts {
		if !seen[id] {
			t.Errorf("%s = %q is not in Rules", name, id)
		}
	}
}
