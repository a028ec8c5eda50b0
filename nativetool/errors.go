package nativetool

import (
	"errors"
	"fmt"
)

// ErrChecksumMismatch marks a refusal to start an executable whose SHA-256
// differs from the one berth reviewed. The process was never started.
// Launch returns it inside a *ChecksumError.
var ErrChecksumMismatch = errors.New("native tool executable does not match the reviewed bundle")

// ErrExited marks a call that failed because the plugin process exited or
// was killed. The Client is finished; launch a new one.
var ErrExited = errors.New("native tool provider exited")

// ErrProtocol marks a plugin that broke the protocol: a message over the
// size limit, malformed JSON, an invalid tool list or result. The plugin
// may still be running; its output was discarded.
var ErrProtocol = errors.New("native tool provider broke the protocol")

// ChecksumError is returned by Launch when the executable's SHA-256 is not
// the reviewed one. It wraps ErrChecksumMismatch.
type ChecksumError struct {
	Path string   // the executable
	Want [32]byte // SHA-256 from the staged listing
	Got  [32]byte // SHA-256 of the file as found
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%v: %s has sha256 %x, but the reviewed bundle lists %x; it was not started. "+
		"Run `berth verify` to see what changed, then review and trust the bundle again",
		ErrChecksumMismatch, e.Path, e.Got, e.Want)
}

// Unwrap returns ErrChecksumMismatch.
func (e *ChecksumError) Unwrap() error { return ErrChecksumMismatch }
