package repo

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/berth-mcp/berth/bundle"
)

// packTarGz writes the validated bundle b as a .tar.gz to w, the same
// bytes for the same tree every time: directories first, then the
// listing's entries in listing order, modes 0755 for directories and
// executables and 0644 for files, no owner, the zero time. Each file's
// content is checked against the listing while it is packed, so a file
// changed since validation fails the packing.
func packTarGz(ctx context.Context, b *bundle.Bundle, w io.Writer) error {
	gz, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0).UTC()
	for _, d := range b.Tree.Dirs() {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	for _, e := range b.Listing().Entries {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch e.Mode {
		case bundle.ModeSymlink:
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: e.Path, Linkname: e.Target, Mode: 0o777, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
		default:
			mode := int64(0o644)
			if e.Mode == bundle.ModeExec {
				mode = 0o755
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.Path, Size: e.Size, Mode: mode, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
				return err
			}
			if err := copyChecked(tw, filepath.Join(b.Dir, filepath.FromSlash(e.Path)), e); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func copyChecked(w io.Writer, path string, e bundle.Entry) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), io.LimitReader(f, e.Size))
	if err != nil {
		return err
	}
	if n != e.Size || [32]byte(h.Sum(nil)) != e.SHA256 {
		return fmt.Errorf("%s changed while berth packed the bundle; make sure nothing writes to it and try again", path)
	}
	return nil
}

// checkPacked re-opens a packed archive and checks that it has the digest
// of the directory it was packed from.
func checkPacked(ctx context.Context, dir string, archive []byte, digest string, opts *bundle.Options) error {
	tmp, err := os.CreateTemp(dir, ".tmp-pack-*.tar.gz")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(archive); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	b, err := bundle.Open(ctx, tmp.Name(), opts)
	if err != nil {
		return fmt.Errorf("the archive packed from the bundle does not open: %w", err)
	}
	defer b.Close()
	if b.Digest != digest {
		return fmt.Errorf("the archive packed from the bundle has digest %s, not %s; the bundle changed while it was packed", b.Digest, digest)
	}
	return nil
}
