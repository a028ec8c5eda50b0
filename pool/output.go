package pool

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/berth-mcp/berth/internal/fsx"
)

const (
	// TailLines is how many lines of a server's stderr the pool keeps.
	TailLines = 200
	// maxLineLen caps one kept line; the rest of a longer line is dropped.
	maxLineLen = 4096
	// maxLogSize is the size at which a server log is rotated to .log.1
	// when a pool first writes to it.
	maxLogSize = 1 << 20
	// ServerLineMark starts every line of a server log that the server
	// (or a native tool provider) wrote; berth's own lines start with
	// "berth <time>: ". A server's line always begins with the mark, so
	// its stderr cannot produce a line that reads as berth's.
	ServerLineMark = "| "
)

// output keeps a server's stderr: the last TailLines lines in memory, and
// every line, with berth's own events, in $BERTH_HOME/logs/<id>.log so the
// tail outlives the process. In the log, a line the server wrote starts
// with ServerLineMark and one of berth's own with "berth ", so that what
// a server writes can never take the form of berth's lines. It is safe
// for concurrent use.
type output struct {
	path string

	mu     sync.Mutex
	ring   [TailLines]string
	next   int
	n      int
	log    *os.File
	opened bool
	size   int64 // of the log, as written
}

func newOutput(path string) *output { return &output{path: path} }

// openLocked opens the log on first use, rotating a large one.
func (o *output) openLocked() {
	if o.opened {
		return
	}
	o.opened = true
	if fi, err := os.Lstat(o.path); err == nil && fi.Mode().IsRegular() && fi.Size() > maxLogSize {
		os.Rename(o.path, o.path+".1")
	}
	// A log that is not the operator's alone (a symbolic link, another
	// user's file) is not written; berth logs says why.
	f, err := fsx.OpenPrivateAppend(o.path)
	if err == nil {
		o.log = f
		if fi, err := f.Stat(); err == nil {
			o.size = fi.Size()
		}
	}
}

// writeLocked appends to the log, rotating it to .log.1 when it grows
// past maxLogSize.
func (o *output) writeLocked(s string) {
	o.openLocked()
	if o.log == nil {
		return
	}
	if o.size > maxLogSize {
		o.log.Close()
		o.log, o.opened = nil, false
		o.openLocked()
		if o.log == nil {
			return
		}
	}
	n, _ := io.WriteString(o.log, s)
	o.size += int64(n)
}

// line records one line of stderr.
func (o *output) line(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ring[o.next] = s
	o.next = (o.next + 1) % TailLines
	if o.n < TailLines {
		o.n++
	}
	o.writeLocked(ServerLineMark + s + "\n")
}

// event writes one of berth's own lines to the log only.
func (o *output) event(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.writeLocked(fmt.Sprintf("berth %s: %s\n", time.Now().UTC().Format(time.RFC3339), fmt.Sprintf(format, args...)))
}

// tail returns the kept lines, oldest first.
func (o *output) tail() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, o.n)
	start := (o.next - o.n + TailLines) % TailLines
	for i := range o.n {
		out = append(out, o.ring[(start+i)%TailLines])
	}
	return out
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.log != nil {
		o.log.Close()
		o.log = nil
	}
}

// copyLines reads r line by line into o until EOF. Lines longer than
// maxLineLen are cut.
func (o *output) copyLines(r io.Reader) {
	br := bufio.NewReaderSize(r, maxLineLen)
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if !skipping {
				o.line(string(chunk) + " [line cut]")
			}
			skipping = true
			continue
		case len(chunk) > 0 && !skipping:
			s := string(chunk)
			if s[len(s)-1] == '\n' {
				s = s[:len(s)-1]
			}
			if len(s) > 0 && s[len(s)-1] == '\r' {
				s = s[:len(s)-1]
			}
			o.line(s)
		}
		skipping = false
		if err != nil {
			return
		}
	}
}

// TailLog returns the last n lines of a server's log file (written by the
// pools of every berth process), for `berth logs`.
// It never follows a symbolic link, and refuses a log that is not the
// operator's alone (fsx.OpenPrivate).
func TailLog(path string, n int) ([]string, error) {
	f, err := fsx.OpenPrivate(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ring []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		ring = append(ring, sc.Text())
		if len(ring) > 2*n {
			ring = append(ring[:0], ring[len(ring)-n:]...)
		}
	}
	if len(ring) > n {
		ring = ring[len(ring)-n:]
	}
	return ring, sc.Err()
}
