package fsx

import (
	"context"
	"errors"
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
