package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Mode is a file's mode as the canonical listing writes it.
type Mode uint32

// The three modes of the canonical listing.
const (
	ModeFile    Mode = 0o100644
	ModeExec    Mode = 0o100755
	ModeSymlink Mode = 0o120000
)

func (m Mode) String() string { return strconv.FormatUint(uint64(m), 8) }

// Entry is one line of the canonical listing: a regular file or a symlink.
type Entry struct {
	Path   string // slash-separated, relative to the bundle root
	Mode   Mode
	Size   int64    // bytes of the file; for a symlink, of its target string
	SHA256 [32]byte // of the content; for a symlink, of its target string
	Target string   // symlink target, as stored
}

// Listing is the canonical listing of a bundle's tree: one line per file,
// sorted by path bytes, "<mode> <sha256-hex> <size> <path>\n". The bundle
// digest is "sha256:" + hex(sha256(listing)). Directories are not listed.
type Listing struct {
	Entries []Entry
}

// Bytes returns the listing in its canonical text form.
func (l *Listing) Bytes() []byte {
	var b bytes.Buffer
	b.Grow(len(l.Entries) * 96)
	var hx [64]byte
	for _, e := range l.Entries {
		hex.Encode(hx[:], e.SHA256[:])
		b.WriteString(e.Mode.String())
		b.WriteByte(' ')
		b.Write(hx[:])
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(e.Size, 10))
		b.WriteByte(' ')
		b.WriteString(e.Path)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// Digest returns "sha256:<hex>" of the listing.
func (l *Listing) Digest() string { return DigestOf(l.Bytes()) }

// DigestOf returns "sha256:<hex>" of a listing's bytes.
func DigestOf(listing []byte) string {
	sum := sha256.Sum256(listing)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Lookup returns the entry at path.
func (l *Listing) Lookup(path string) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(l.Entries, path, func(e Entry, p string) int { return strings.Compare(e.Path, p) })
	if !ok {
		return Entry{}, false
	}
	return l.Entries[i], true
}

// TotalSize is the sum of the sizes of the listed files.
func (l *Listing) TotalSize() int64 {
	var n int64
	for _, e := range l.Entries {
		n += e.Size
	}
	return n
}

// ParseListing parses a canonical listing and checks that it is canonical:
// known modes, lower-case hex, sorted unique paths, a final newline.
func ParseListing(data []byte) (*Listing, error) {
	l := &Listing{}
	if len(data) == 0 {
		return l, nil
	}
	if data[len(data)-1] != '\n' {
		return nil, fmt.Errorf("listing does not end with a newline")
	}
	lines := strings.Split(string(data[:len(data)-1]), "\n")
	for i, line := range lines {
		fields := strings.SplitN(line, " ", 4)
		if len(fields) != 4 {
			return nil, fmt.Errorf("listing line %d: want \"<mode> <sha256> <size> <path>\"", i+1)
		}
		var e Entry
		switch fields[0] {
		case "100644":
			e.Mode = ModeFile
		case "100755":
			e.Mode = ModeExec
		case "120000":
			e.Mode = ModeSymlink
		default:
			return nil, fmt.Errorf("listing line %d: mode %q is not 100644, 100755 or 120000", i+1, fields[0])
		}
		if len(fields[1]) != 64 || strings.ToLower(fields[1]) != fields[1] {
			return nil, fmt.Errorf("listing line %d: hash is not 64 lower-case hex digits", i+1)
		}
		if _, err := hex.Decode(e.SHA256[:], []byte(fields[1])); err != nil {
			return nil, fmt.Errorf("listing line %d: hash is not 64 lower-case hex digits", i+1)
		}
		size, err := strconv.ParseInt(fields[2], 10, 64)
		if err != nil || size < 0 || strconv.FormatInt(size, 10) != fields[2] {
			return nil, fmt.Errorf("listing line %d: size %q is not a canonical non-negative integer", i+1, fields[2])
		}
		e.Size = size
		e.Path = fields[3]
		if e.Path == "" {
			return nil, fmt.Errorf("listing line %d: empty path", i+1)
		}
		if n := len(l.Entries); n > 0 && l.Entries[n-1].Path >= e.Path {
			return nil, fmt.Errorf("listing line %d: paths are not sorted and unique", i+1)
		}
		l.Entries = append(l.Entries, e)
	}
	return l, nil
}

// Diff describes how two listings differ, path by path.
type Diff struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []Change `json:"changed,omitempty"`
}

// Change is a path present in both listings whose content or mode differs.
type Change struct {
	Path    string `json:"path"`
	OldMode string `json:"oldMode,omitempty"`
	NewMode string `json:"newMode,omitempty"`
	Content bool   `json:"content,omitempty"`
}

// Empty reports whether the listings were equal.
func (d *Diff) Empty() bool { return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 }

func (d *Diff) String() string {
	var parts []string
	for _, p := range d.Added {
		parts = append(parts, "added "+p)
	}
	for _, p := range d.Removed {
		parts = append(parts, "removed "+p)
	}
	for _, c := range d.Changed {
		var what []string
		if c.Content {
			what = append(what, "content")
		}
		if c.OldMode != c.NewMode {
			what = append(what, "mode "+c.OldMode+" -> "+c.NewMode)
		}
		parts = append(parts, "changed "+c.Path+" ("+strings.Join(what, ", ")+")")
	}
	return strings.Join(parts, "; ")
}

// Compare returns what changed from old to new.
func Compare(old, new *Listing) *Diff {
	d := &Diff{}
	i, j := 0, 0
	for i < len(old.Entries) || j < len(new.Entries) {
		switch {
		case j == len(new.Entries) || (i < len(old.Entries) && old.Entries[i].Path < new.Entries[j].Path):
			d.Removed = append(d.Removed, old.Entries[i].Path)
			i++
		case i == len(old.Entries) || new.Entries[j].Path < old.Entries[i].Path:
			d.Added = append(d.Added, new.Entries[j].Path)
			j++
		default:
			o, n := old.Entries[i], new.Entries[j]
			if o.Mode != n.Mode || o.SHA256 != n.SHA256 || o.Size != n.Size {
				d.Changed = append(d.Changed, Change{Path: o.Path, OldMode: o.Mode.String(), NewMode: n.Mode.String(), Content: o.SHA256 != n.SHA256 || o.Size != n.Size})
			}
			i++
			j++
		}
	}
	return d
}
