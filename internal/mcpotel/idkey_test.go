package mcpotel

import (
	"context"
	"reflect"
	"testing"
)

// TestProbeSDKIDKey: go-sdk's request-ID key is found once, from a
// private server of its own, with no context of a caller's: a process
// whose first messages are notifications never walks their contexts.
// Fails when a go-sdk upgrade moves the key.
func TestProbeSDKIDKey(t *testing.T) {
	k, ok := probeSDKIDKey()
	if !ok {
		t.Fatal("the probe did not find go-sdk's idContextKey")
	}
	if typ := reflect.TypeOf(k); typ.Name() != "idContextKey" || typ.PkgPath() != "github.com/modelcontextprotocol/go-sdk/mcp" {
		t.Fatalf("the probe found %v; want go-sdk's idContextKey", typ)
	}
	// A context with no ID (a notification's) answers no ID.
	if _, ok := IncomingRequestID(notificationContext()); ok {
		t.Fatal("an ID in a context without one")
	}
}

// notificationContext is a chain like a notification handler's: values
// and without-cancels, no request ID.
func notificationContext() context.Context {
	type k int
	ctx := context.Background()
	for i := range 12 {
		ctx = context.WithValue(ctx, k(i), i)
		ctx = context.WithoutCancel(ctx)
	}
	return ctx
}

// BenchmarkIncomingRequestIDNoID: IncomingRequestID on a context without
// an ID, once the key is known (one context lookup), against
// BenchmarkFindSDKIDKeyNoID, the reflection walk that ran on every such
// call before the key was found.
func BenchmarkIncomingRequestIDNoID(b *testing.B) {
	ctx := notificationContext()
	IncomingRequestID(ctx)
	b.ResetTimer()
	for b.Loop() {
		IncomingRequestID(ctx)
	}
}

func BenchmarkFindSDKIDKeyNoID(b *testing.B) {
	ctx := notificationContext()
	for b.Loop() {
		findSDKIDKey(ctx)
	}
}
