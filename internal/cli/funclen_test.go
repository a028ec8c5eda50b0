package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the most lines a function of this package may have,
// from its func keyword to its closing brace: a command is an options
// struct filled by its cobra constructor and a run function, and a long
// help text is a package-level constant.
const maxFuncLines = 80

// TestNoLongFunctions keeps every function of the package (tests aside)
// at most maxFuncLines long.
func TestNoLongFunctions(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxFuncLines {
				t.Errorf("%s:%d: %s is %d lines long, more than %d: split it (options + run, a helper, or its help text into a constant)", name, start.Line, fn.Name.Name, n, maxFuncLines)
			}
		}
	}
}
