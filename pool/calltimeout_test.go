package pool

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A request's call timeout ends it with errCallTimeout; ExtendCallTimeout
// (a human asked during the request) pushes that back, from now; after
// the request is released, or elsewhere, it extends nothing.
func TestExtendCallTimeout(t *testing.T) {
	ctx, cancel := withCallTimeout(context.Background(), 50*time.Millisecond)
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), errCallTimeout) {
		t.Fatalf("cause %v", context.Cause(ctx))
	}
	if ExtendCallTimeout(ctx, time.Hour) {
		t.Fatal("extended a request that timed out")
	}
	cancel(nil)

	ctx, cancel = withCallTimeout(context.Background(), 50*time.Millisecond)
	if !ExtendCallTimeout(ctx, 300*time.Millisecond) {
		t.Fatal("not extended")
	}
	start := time.Now()
	select {
	case <-ctx.Done():
		t.Fatalf("ended after %s despite the extension", time.Since(start))
	case <-time.After(200 * time.Millisecond):
	}
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), errCallTimeout) || time.Since(start) > 2*time.Second {
		t.Fatalf("cause %v after %s", context.Cause(ctx), time.Since(start))
	}
	cancel(nil)

	ctx, cancel = withCallTimeout(context.Background(), time.Hour)
	cancel(nil)
	if ExtendCallTimeout(ctx, time.Hour) || ExtendCallTimeout(context.Background(), time.Hour) {
		t.Fatal("extended a released request, or one the pool does not send")
	}
}
