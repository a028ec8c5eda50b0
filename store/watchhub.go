package store

import (
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchHub is one file-system watch (fsnotify) shared by a Store's drift
// checkers and generation watches. Each fsnotify watch costs an inotify
// instance and a reader goroutine whose stack holds a 64 KiB buffer (128
// KiB of stack in all), so a pool of 20 plugins with a watch each spent
// 2.7 MB on them; one watch per Store spends one. The hub counts how many
// subscriptions hold each directory, and closes the watch when the last
// one is closed. Callbacks run on the hub's goroutine under its lock:
// they must only set flags.
type watchHub struct {
	mu   sync.Mutex
	fw   *fsnotify.Watcher
	refs map[string]int
	subs map[string]map[*watchSub]bool
	all  map[*watchSub]bool
}

// hubNote is what a subscription is told.
type hubNote int

const (
	noteEvent hubNote = iota // ev names a change in one of its directories
	noteLost                 // events may have been lost (an overflow)
	noteDead                 // the watch ended: no more events will come
	noteTick                 // its period passed (a ticker, so a Check reads no clock)
)

type watchSub struct {
	hub   *watchHub
	dirs  []string
	every int // ticks (of hubTick) per noteTick
	ticks int
	cb    func(hubNote, fsnotify.Event)
}

// hubTick is the hub's clock; a subscription's period is a multiple.
const hubTick = time.Second

// subscribe watches dirs for cb. period is rounded up to whole hubTicks.
// An error means no watch: the caller must not trust one.
func (h *watchHub) subscribe(dirs []string, period time.Duration, cb func(hubNote, fsnotify.Event)) (*watchSub, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fw == nil {
		fw, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		h.fw, h.refs, h.subs, h.all = fw, map[string]int{}, map[string]map[*watchSub]bool{}, map[*watchSub]bool{}
		go h.run(fw)
	}
	s := &watchSub{hub: h, every: max(1, int((period+hubTick-1)/hubTick)), cb: cb}
	for _, d := range dirs {
		d = filepath.Clean(d)
		if h.refs[d] == 0 {
			if err := h.fw.Add(d); err != nil {
				h.release(s)
				return nil, err
			}
		}
		h.refs[d]++
		if h.subs[d] == nil {
			h.subs[d] = map[*watchSub]bool{}
		}
		h.subs[d][s] = true
		s.dirs = append(s.dirs, d)
	}
	h.all[s] = true
	return s, nil
}

// close ends the subscription; the last one closes the watch.
func (s *watchSub) close() {
	h := s.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release(s)
}

// release drops s's directories; the caller holds mu.
func (h *watchHub) release(s *watchSub) {
	for _, d := range s.dirs {
		delete(h.subs[d], s)
		if h.refs[d]--; h.refs[d] <= 0 {
			delete(h.refs, d)
			delete(h.subs, d)
			if h.fw != nil {
				h.fw.Remove(d) // gone already when the directory was removed
			}
		}
	}
	s.dirs = nil
	delete(h.all, s)
	if len(h.all) == 0 && h.fw != nil {
		h.fw.Close()
		h.fw = nil
	}
}

// run delivers fw's events until fw is closed (then, if fw is still the
// hub's watch, the watch failed: every subscription is told).
func (h *watchHub) run(fw *fsnotify.Watcher) {
	tick := time.NewTicker(hubTick)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-fw.Events:
			if !ok {
				h.died(fw)
				return
			}
			h.mu.Lock()
			name := filepath.Clean(ev.Name)
			for s := range h.subs[name] {
				s.cb(noteEvent, ev)
			}
			if dir := filepath.Dir(name); dir != name {
				for s := range h.subs[dir] {
					s.cb(noteEvent, ev)
				}
			}
			h.mu.Unlock()
		case _, ok := <-fw.Errors:
			if !ok {
				h.died(fw)
				return
			}
			h.notifyAll(fw, noteLost)
		case <-tick.C:
			h.mu.Lock()
			if h.fw != fw {
				h.mu.Unlock()
				return
			}
			for s := range h.all {
				if s.ticks++; s.ticks >= s.every {
					s.ticks = 0
					s.cb(noteTick, fsnotify.Event{})
				}
			}
			h.mu.Unlock()
		}
	}
}

func (h *watchHub) notifyAll(fw *fsnotify.Watcher, n hubNote) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fw != fw {
		return
	}
	for s := range h.all {
		s.cb(n, fsnotify.Event{})
	}
}

// died handles the end of fw: closed by release (nothing to say) or
// failed (every subscription loses its watch, and the next subscribe
// starts a new one).
func (h *watchHub) died(fw *fsnotify.Watcher) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fw != fw {
		return
	}
	for s := range h.all {
		s.cb(noteDead, fsnotify.Event{})
		s.dirs = nil
	}
	h.fw, h.refs, h.subs, h.all = nil, nil, nil, nil
	fw.Close()
}
