package cli

import (
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const modulePath = "github.com/berth-mcp/berth"

// payloadDocs renders the JSON payload types of --json for docs/cli.md:
// every field under its JSON name, with its type and the doc comment of
// the Go field, read from the source of the package that declares it.
type payloadDocs struct {
	t    *testing.T
	pkgs map[string]*docPackage // by import path
}

type docPackage struct {
	types  map[string]string // type name -> doc
	fields map[string]string // "Type.Field" -> doc
}

func (d *payloadDocs) pkg(path string) *docPackage {
	if p, ok := d.pkgs[path]; ok {
		return p
	}
	p := &docPackage{types: map[string]string{}, fields: map[string]string{}}
	d.pkgs[path] = p
	if path != modulePath && !strings.HasPrefix(path, modulePath+"/") {
		return p
	}
	dir := filepath.Join("..", "..", strings.TrimPrefix(strings.TrimPrefix(path, modulePath), "/"))
	fset := token.NewFileSet()
	ents, err := os.ReadDir(dir)
	if err != nil {
		d.t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			d.t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := ts.Doc.Text()
				if doc == "" && len(gd.Specs) == 1 {
					doc = gd.Doc.Text()
				}
				p.types[ts.Name.Name] = doc
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				for _, fl := range st.Fields.List {
					text := fl.Doc.Text()
					if text == "" {
						text = fl.Comment.Text()
					}
					for _, n := range fl.Names {
						p.fields[ts.Name.Name+"."+n.Name] = text
					}
				}
			}
		}
	}
	return p
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshalerType = reflect.TypeFor[json.Marshaler]()
	textType      = reflect.TypeFor[encoding.TextMarshaler]()
)

// typeName says what JSON a Go type makes, in a few words.
func (d *payloadDocs) typeName(t reflect.Type) string {
	switch {
	case t == timeType:
		return "string, an RFC 3339 time"
	case t == rawType:
		return "any JSON value"
	case t.Kind() == reflect.Pointer:
		return d.typeName(t.Elem())
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return "JSON, as " + t.String() + " marshals itself"
	case t.Implements(textType) || reflect.PointerTo(t).Implements(textType):
		return "string"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "string, base64"
		}
		return "array of " + d.typeName(t.Elem())
	case reflect.Map:
		return "object of " + d.typeName(t.Elem())
	case reflect.Struct:
		if !ours(t) {
			return "object (" + t.String() + ")"
		}
		return "object"
	case reflect.Interface:
		return "any JSON value"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	}
	return t.String()
}

func ours(t reflect.Type) bool {
	return t.PkgPath() == modulePath || strings.HasPrefix(t.PkgPath(), modulePath+"/")
}

// elem is the struct a field's value is made of, if berth declares it and
// it marshals as its fields.
func elem(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		if t == rawType {
			return nil, false
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || !ours(t) || t == timeType || t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType) {
		return nil, false
	}
	return t, true
}

// render writes the payload of type t.
func (d *payloadDocs) render(b io.Writer, t reflect.Type) {
	fmt.Fprintf(b, "\nJSON (`--json`): %s", d.typeName(t))
	if st, ok := elem(t); ok {
		// "fooJSON is what foo --json prints." says nothing the heading
		// does not; other type docs describe the payload.
		if doc := oneParagraph(d.pkg(st.PkgPath()).types[st.Name()]); doc != "" && !strings.HasPrefix(doc, st.Name()+" is what ") {
			fmt.Fprintf(b, "; %s", doc)
		}
		io.WriteString(b, "\n\n")
		d.fields(b, st, 0, map[reflect.Type]bool{})
	} else {
		io.WriteString(b, "\n")
	}
}

func (d *payloadDocs) fields(b io.Writer, t reflect.Type, depth int, seen map[reflect.Type]bool) {
	if seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	indent := strings.Repeat("  ", depth)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				d.fields(b, ft, depth, seen)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		line := fmt.Sprintf("%s- `%s` (%s", indent, name, d.typeName(f.Type))
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			line += ", omitted when empty"
		}
		line += ")"
		if doc := d.pkg(t.PkgPath()).fields[t.Name()+"."+f.Name]; doc != "" {
			line += ": " + oneParagraph(doc)
		}
		io.WriteString(b, line+"\n")
		if st, ok := elem(f.Type); ok && depth < 3 {
			d.fields(b, st, depth+1, seen)
		}
	}
}

// oneParagraph is a doc comment as one line, its first paragraph.
func oneParagraph(s string) string {
	p, _, _ := strings.Cut(strings.TrimSpace(s), "\n\n")
	return strings.Join(strings.Fields(p), " ")
}
