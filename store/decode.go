package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"reflect"
	"strings"

	"github.com/berth-mcp/berth/internal/fsx"
	"github.com/berth-mcp/berth/internal/strictjson"
)

// maxStateFileSize caps what berth reads of state.json and config.json.
const maxStateFileSize = 64 << 20

// maxStateDepth is how deeply objects and arrays may nest in a state file
// (state.json needs six levels).
const maxStateDepth = 32

// FileError is a state file (state.json, config.json) that berth cannot
// use as it is: every problem found, each at its JSON path, and what to
// do. berth never repairs or rewrites such a file by itself.
type FileError struct {
	// Path is the file.
	Path string
	// Problems are the problems found, each starting with its JSON path.
	Problems []string
	// Fix says what to do.
	Fix string
}

func (e *FileError) Error() string {
	what := "a problem"
	if len(e.Problems) > 1 {
		what = fmt.Sprintf("%d problems", len(e.Problems))
	}
	return fmt.Sprintf("%s has %s, so berth does not use it: %s; %s", e.Path, what, strings.Join(e.Problems, "; "), e.Fix)
}

// fixDamaged is the fix for a state file berth did not write that way.
const fixDamaged = "berth writes these files itself and never like this: undo a hand edit, or restore the file from a backup (removing it starts over and loses what it holds)"

// fixUnknown is the fix for fields berth does not know.
const fixUnknown = "this berth does not know that field, and a newer berth may have written it: use that berth, or remove the field by hand if you are sure it does not matter (berth refuses to drop what it does not understand: it could be a setting that restricts something)"

// readStrict reads a state file into v (a pointer to a struct) as
// strictly as a manifest: valid UTF-8, one JSON value, no duplicate keys
// (nor keys equal but for letter case) in any object, exactly the field
// names of v's type, the right type everywhere, no null where a value is
// required, every required field present. A missing file leaves v as it
// is and reports false. Any problem is a *FileError naming the file, every
// problem and the fix.
func readStrict(path string, v any) (bool, error) {
	f, err := fsx.OpenPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	// One byte over the cap is enough for decodeStrict to say so.
	data, err := io.ReadAll(io.LimitReader(f, maxStateFileSize+1))
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if problems, unknown := decodeStrict(data, v); len(problems) > 0 {
		fix := fixDamaged
		if unknown && len(problems) == 1 {
			fix = fixUnknown
		}
		return false, &FileError{Path: path, Problems: problems, Fix: fix}
	}
	return true, nil
}

// decodeStrict decodes data into v, returning every problem (each
// prefixed with its JSON path) and whether the only kind of problem was an
// unknown field.
func decodeStrict(data []byte, v any) (problems []string, onlyUnknown bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		panic("store: decodeStrict needs a pointer to a struct")
	}
	ps := strictjson.Decode(data, v, strictjson.Options{
		MaxSize:       maxStateFileSize,
		MaxDepth:      maxStateDepth,
		FoldCase:      true,
		RequireFields: true,
	})
	onlyUnknown = true
	for _, p := range ps {
		problems = append(problems, p.String())
		onlyUnknown = onlyUnknown && p.Kind == strictjson.UnknownField
	}
	return problems, onlyUnknown
}

// jsonPath appends a key to a JSON path: a.b, or a["/x y"] for keys that
// are not simple.
func jsonPath(path, key string) string { return strictjson.JoinPath(path, key) }
