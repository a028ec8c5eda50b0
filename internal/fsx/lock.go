package fsx

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/gofrs/flock"
)

// Lock takes the exclusive file lock path (creating the file), waiting
// until it is free or ctx is done, and returns the function that releases
// it. The error is the cause (ctx's error when it ended the wait); callers
// say which lock it was.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	fl := flock.New(path)
	ok, err := fl.TryLockContext(ctx, 10*time.Millisecond)
	if err == nil && !ok {
		err = errors.New("the lock was not taken")
	}
	if err != nil {
		return nil, err
	}
	return func() { fl.Unlock() }, nil
}

// HoldLock takes the exclusive file lock path (creating the file) for as
// long as the caller lives, waiting up to wait for it, and returns the
// function that releases it and removes the file. Another process that
// finds the lock free may remove the file while holding it (TryLock's
// stale case); a lock then taken on the unlinked file would say nothing,
// so HoldLock checks that path is still the file it locked, and tries
// again otherwise.
func HoldLock(ctx context.Context, path string) (release func(), err error) {
	for range 5 {
		fl := flock.New(path)
		ok, err := fl.TryLockContext(ctx, 10*time.Millisecond)
		if err == nil && !ok {
			err = errors.New("the lock was not taken")
		}
		if err != nil {
			return nil, err
		}
		held, err1 := fl.Stat()
		now, err2 := os.Lstat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() {
				os.Remove(path)
				fl.Unlock()
			}, nil
		}
		fl.Unlock()
	}
	return nil, errors.New("the lock file was removed again and again while it was taken")
}

// TryLock takes the exclusive file lock path (creating the file) if no
// one holds it, without waiting. held is true when another holder has
// it (release is then nil); otherwise release gives it back.
func TryLock(path string) (release func(), held bool, err error) {
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, false, err
	}
	if !ok {
		return nil, true, nil
	}
	return func() { fl.Unlock() }, false, nil
}
