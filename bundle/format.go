package bundle

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// A Format is a manifest format of another tool that Load reads by
// converting the source's manifest into a berth.json (docs/manifest.md,
// "Importing other formats"). Load recognizes a format by its manifest
// file, converts the source with Convert, and validates the result as any
// bundle; the problems of the generated berth.json are located at the
// source's file and field they came from.
//
// Formats are registered once, at init, with RegisterFormat; package
// bundle/formats registers the three that berth reads (MCP Bundles, Claude
// Code plugins, MCP Registry server.json), so a program that reads them
// imports it, as image/png registers itself for image.Decode:
//
//	import _ "github.com/berth-mcp/berth/bundle/formats"
//
// Without a registered format, Load reads berth bundles only.
type Format struct {
	// Name is what ImportedFrom.Format records: "mcpb".
	Name string
	// Manifest is the source's manifest, relative to the bundle root, by
	// whose presence Load recognizes the format: "manifest.json".
	Manifest string
	// Title names the manifest in notes and messages: "an MCP Bundle
	// manifest".
	Title string
	// Claims, when set, reports whether data, the Manifest file of a tree
	// that also holds another format's manifest, really is of this format
	// (a plain file of that name may sit in a bundle of another format).
	// Nil claims any file.
	Claims func(data []byte) bool
	// Hint, when set, returns a problem for a tree that holds no
	// manifest of any format but looks like one of this format (a Claude
	// Code plugin's .mcp.json without its plugin.json). has reports
	// whether a slash-separated path exists in the tree.
	Hint func(has func(rel string) bool) *Problem
	// ArchiveExt is the file extension, lower case, of a zip of this
	// format (".mcpb"), or "".
	ArchiveExt string
	// ZipTrailer, when set, reads a block the format appends to a zip (the
	// MCPB signature block). f holds size bytes; zipEnd says where a zip
	// of the first n bytes ends. found is false when the file has no
	// block of the format; otherwise zipSize is the size of the zip
	// before it, and sig describes the block, or ps says why the file
	// cannot be read.
	ZipTrailer func(f io.ReaderAt, size int64, zipEnd func(n int64) (int64, bool)) (zipSize int64, sig *MCPBSignature, ps []*Problem, found bool)
	// File, when set, says what a JSON file given on its own is: the
	// format's manifest (take; Load reads it as a bundle of that one
	// file, named Manifest), or err, which says what to point berth at
	// instead.
	File func(source string, data []byte) (take bool, err error)
	// Convert converts the source whose files are in dir (a copy berth
	// owns; it reads nothing outside dir).
	Convert func(dir string) *Conversion
	// ConvertWithout, when set, converts the source leaving out the
	// servers named in without (Options.Without); nil for a format that
	// cannot leave servers out.
	// It fails when a name in without is no server of the source.
	ConvertWithout func(dir string, without []string) (*Conversion, error)
}

// Conversion is what a Format makes of a source.
type Conversion struct {
	// Manifest is the generated berth.json; nil when the source could not
	// be converted at all. Its ImportedFrom says where it came from.
	Manifest *Manifest
	// Problems are the source's own problems, each located as
	// "file: json.path" (or a file path).
	Problems []*Problem
	// Locations maps JSON paths of the generated berth.json to the
	// source's file and field they came from; Load moves the problems of
	// the generated berth.json there.
	Locations map[string]string
	// Servers maps each server's name in the source to where the source
	// defines it ("file: json.path"): a problem there is that server's.
	Servers map[string]string
}

var (
	formatsMu sync.RWMutex
	formats   []*Format
)

// RegisterFormat makes Load read sources of format f. It is meant to be
// called from an init function (package bundle/formats does); it panics
// when f has no Name, Manifest or Convert, or when a format of that name
// or manifest is registered already. Formats are recognized in the order
// they were registered.
func RegisterFormat(f *Format) {
	if f == nil || f.Name == "" || f.Manifest == "" || f.Convert == nil {
		panic("bundle: RegisterFormat needs a Name, a Manifest and Convert")
	}
	formatsMu.Lock()
	defer formatsMu.Unlock()
	for _, g := range formats {
		if g.Name == f.Name || g.Manifest == f.Manifest {
			panic(fmt.Sprintf("bundle: format %q (%s) registered twice", f.Name, f.Manifest))
		}
	}
	formats = append(formats, f)
}

// Formats returns the registered formats, in the order they were
// registered.
func Formats() []*Format {
	formatsMu.RLock()
	defer formatsMu.RUnlock()
	return slices.Clone(formats)
}

// MCPBSignature describes the signature block appended to a .mcpb. berth
// reports it and does not rest trust on it: berth verifies Sigstore
// signatures over its canonical listing (docs/signing.md).
type MCPBSignature struct {
	// Size is the length of the DER signature.
	Size int
	// Verifies is true when the CMS signature is valid over the zip's
	// bytes for the certificate it carries. That certificate is not
	// checked against any trust store.
	Verifies bool
	// Problem says why it does not verify, or why it was not checked.
	Problem string
	// SelfSigned is true when the signing certificate is issued by
	// itself.
	SelfSigned bool
	// Subject and Issuer are the signing certificate's names.
	Subject, Issuer string
	// Fingerprint is the hex SHA-256 of the signing certificate.
	Fingerprint string
	NotBefore   time.Time
	NotAfter    time.Time
}

// zipTrailer finds where the zip of a file ends, reading a block that a
// registered format appends to it (Format.ZipTrailer). Bytes after the
// zip that no format reads are a problem (ok is false: the zip is not
// read).
func (x *extractor) zipTrailer(f io.ReaderAt, size int64) (zipSize int64, sig *MCPBSignature, ok bool) {
	end := func(n int64) (int64, bool) { return zipEnd(f, n) }
	for _, fm := range x.formats {
		if fm.ZipTrailer == nil {
			continue
		}
		zs, sig, ps, found := fm.ZipTrailer(f, size, end)
		if !found {
			continue
		}
		if len(ps) > 0 {
			x.ps.list = append(x.ps.list, ps...)
			return 0, nil, false
		}
		return zs, sig, true
	}
	if e, found := zipEnd(f, size); found && e != size {
		x.ps.add(".", RuleArchiveFormat, "the file has %d bytes after the end of the zip that are not an MCPB signature block; re-create the archive", size-e)
		return 0, nil, false
	}
	// A zip, or not a zip: let the zip reader say so.
	return size, nil, true
}

// zipEnd finds the zip's end-of-central-directory record in the last
// 64 KiB of the first size bytes and returns where the zip ends (after the
// record and its comment). The record nearest the end whose comment fits
// is taken, as archive/zip does.
func zipEnd(f io.ReaderAt, size int64) (int64, bool) {
	const eocdLen = 22
	n := min(size, int64(eocdLen+0xffff))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, false
	}
	for i := len(buf) - eocdLen; i >= 0; i-- {
		if buf[i] == 'P' && buf[i+1] == 'K' && buf[i+2] == 5 && buf[i+3] == 6 {
			clen := int(binary.LittleEndian.Uint16(buf[i+20:]))
			if i+eocdLen+clen <= len(buf) {
				return size - n + int64(i+eocdLen+clen), true
			}
		}
	}
	return 0, false
}
