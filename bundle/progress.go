package bundle

import (
	"context"
	"sync/atomic"
)

// HashProgress is told, as a tree's regular files are hashed (ReadTree,
// and so Open and Load), how many of their bytes are done out of the
// total. It is called from several goroutines at once, with done never
// decreasing within one tree; it must be quick and safe for concurrent
// use.
type HashProgress func(done, total int64)

type progressKey struct{}

// WithHashProgress returns a context that makes every tree read with it
// report to f: a progress bar for large bundles, say.
func WithHashProgress(ctx context.Context, f HashProgress) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func hashProgress(ctx context.Context) HashProgress {
	f, _ := ctx.Value(progressKey{}).(HashProgress)
	return f
}

// progressWriter counts the bytes written through it into done and
// reports them.
type progressWriter struct {
	done  *atomic.Int64
	total int64
	f     HashProgress
}

func (w progressWriter) Write(p []byte) (int, error) {
	w.f(w.done.Add(int64(len(p))), w.total)
	return len(p), nil
}
