package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/berth-mcp/berth/nativetool"
)

// workspace confines every path a tool is given to one directory tree.
type workspace struct {
	root string // absolute, symlinks resolved; empty when err is set
	err  error  // why the workspace is unusable
}

func openWorkspace(dir string) *workspace {
	if dir == "" {
		return &workspace{err: fmt.Errorf("%s is not set; berth sets it to the workspace directory when it launches this plugin", nativetool.EnvWorkspace)}
	}
	if !filepath.IsAbs(dir) {
		return &workspace{err: fmt.Errorf("%s=%q is not an absolute path", nativetool.EnvWorkspace, dir)}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return &workspace{err: fmt.Errorf("the workspace %s: %v", dir, err)}
	}
	fi, err := os.Stat(real)
	if err != nil {
		return &workspace{err: fmt.Errorf("the workspace %s: %v", dir, err)}
	}
	if !fi.IsDir() {
		return &workspace{err: fmt.Errorf("the workspace %s is not a directory", dir)}
	}
	return &workspace{root: real}
}

// resolve turns a path given by a client into a path relative to the
// workspace root that names the same file with every symbolic link
// resolved. It refuses an empty or absolute path, any ".." element, and a
// path that leads outside the workspace through a symbolic link. Files are
// then opened through an os.Root, which refuses to leave the root even if
// the tree changes after this check.
func (w *workspace) resolve(p string) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	if p == "" {
		return "", errors.New(`"path" is required: a file path relative to the workspace`)
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("the path contains a NUL byte")
	}
	slashed := filepath.ToSlash(p)
	if filepath.IsAbs(p) || strings.HasPrefix(slashed, "/") || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("the path %q is absolute; give it relative to the workspace", p)
	}
	for _, elem := range strings.Split(slashed, "/") {
		if elem == ".." {
			return "", fmt.Errorf("the path %q contains \"..\"; give a path inside the workspace", p)
		}
	}
	clean := filepath.Clean(filepath.FromSlash(slashed))
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("the path %q is not inside the workspace", p)
	}
	real, err := filepath.EvalSymlinks(filepath.Join(w.root, clean))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: no such file in the workspace", slashed)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %v", slashed, unwrapPath(err))
	}
	rel, err := filepath.Rel(w.root, real)
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("the path %q leads outside the workspace through a symbolic link; it is refused", p)
	}
	return rel, nil
}

// openRoot opens the workspace for confined file access.
func (w *workspace) openRoot() (*os.Root, error) {
	if w.err != nil {
		return nil, w.err
	}
	return os.OpenRoot(w.root)
}

// unwrapPath drops the absolute path from a *fs.PathError, so messages
// name files relative to the workspace.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
