package pool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-mcp/berth/fetched"
)

// A PyPI tree runs with the python named on its program's first line;
// when that python is gone the server does not start, and the error says
// to re-trust.
func TestPyPIInterpreter(t *testing.T) {
	tree := t.TempDir()
	py := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(tree, "bin"), 0o755)
	os.WriteFile(filepath.Join(tree, "bin", "srv"), []byte("#!"+py+"\nimport sys\n"), 0o755)
	l := &fetched.Lock{Ecosystem: "pypi", Package: "srv==1.0", Program: "bin/srv"}
	if got, err := pypiInterpreter("p__s", l, tree); err != nil || got != py {
		t.Fatalf("pypiInterpreter = %q, %v", got, err)
	}
	os.Remove(py)
	if _, err := pypiInterpreter("p__s", l, tree); err == nil || !strings.Contains(err.Error(), "is gone or not executable; re-trust the plugin") {
		t.Errorf("a python that is gone: %v", err)
	}
	os.WriteFile(filepath.Join(tree, "bin", "srv"), []byte("#!/usr/bin/env python3\n"), 0o755)
	if _, err := pypiInterpreter("p__s", l, tree); err == nil || !strings.Contains(err.Error(), "run berth verify") {
		t.Errorf("a program without an absolute python: %v", err)
	}
}
