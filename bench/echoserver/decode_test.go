package main

import (
	"bytes"
	"testing"

	"github.com/segmentio/encoding/json"
)

// A tools/call request as the driver sends it, and the jsonrpc2 wire
// message go-sdk decodes it into (the shape of internal/jsonrpc2's
// wireCombined: method, id, params and result kept raw).
var callMessage = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello from the benchmark driver"},"_meta":{"progressToken":7}}}`)

type wireCombined struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     string          `json:"method,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      json.RawMessage `json:"error,omitempty"`
}

// BenchmarkDecodeStreaming is what go-sdk v1.8.0's internal/json.Unmarshal
// does for every message and params decode: a fresh streaming Decoder
// over a bytes.Reader (segmentio/encoding v0.5.4), which allocates a
// 32 KiB buffer (json.go, readValue, minBufferSize) and copies the
// message into it.
func BenchmarkDecodeStreaming(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var m wireCombined
		if err := json.NewDecoder(bytes.NewReader(callMessage)).Decode(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeUnmarshal is the same decode without a stream: the
// library's Unmarshal parses the bytes in place.
func BenchmarkDecodeUnmarshal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var m wireCombined
		if err := json.Unmarshal(callMessage, &m); err != nil {
			b.Fatal(err)
		}
	}
}
