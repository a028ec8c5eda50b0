// Package launcher is the sandbox launcher that berth re-executes itself as
// (docs/sandbox.md §Enforcement). It runs in this package's init, before
// the rest of berth's packages initialise (it imports only syscall,
// golang.org/x/sys/unix and runtime, so Go initialises it early), which
// keeps the start-up cost of confinement to a few milliseconds: the
// restrictions themselves (the Landlock ruleset and the seccomp program)
// are prepared by berth, and the launcher only applies them and execs.
//
// Wire format of the spec pipe, little-endian: u32 flags, u32 Landlock
// restrict flags, string path, u32 count + strings argv, u32 count +
// strings env, bytes seccomp program (8-byte sock_filter entries), u32
// count + strings of read-only paths (FlagMountNS); a string
// or bytes is a u32 length and its bytes.
package launcher
