package pool

import (
	"context"
	"sync"
	"time"
)

// A request to a server is bounded by the server's call timeout, after
// which the server is treated as hung. A remote that signs in with OAuth
// may, during a request, wait for a human to sign in (berth serve asks
// its client: signin.WithAsk); that wait is not the server's, so the one
// who asks extends the request's timeout for it (ExtendCallTimeout).

type extendKey struct{}

// withCallTimeout returns a context that ends with errCallTimeout after d
// unless ExtendCallTimeout pushes that back, and the function that
// releases it (cancel with a cause).
func withCallTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelCauseFunc) {
	cctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	timer := time.AfterFunc(d, func() { cancel(errCallTimeout) })
	extend := func(by time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		if !timer.Stop() {
			return false // already timed out or released
		}
		timer.Reset(d + by)
		return true
	}
	return context.WithValue(cctx, extendKey{}, extend), func(cause error) {
		mu.Lock()
		timer.Stop()
		mu.Unlock()
		cancel(cause)
	}
}

// ExtendCallTimeout gives the request of ctx (a tools/call, prompts/get
// or resources/read the pool is sending) by more than its server's call
// timeout, counted from now: for a wait that is a human's, not the
// server's, such as a sign-in asked during the request. It reports
// whether ctx is such a request still running.
func ExtendCallTimeout(ctx context.Context, by time.Duration) bool {
	extend, ok := ctx.Value(extendKey{}).(func(time.Duration) bool)
	return ok && extend(by)
}
