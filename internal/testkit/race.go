//go:build race

package testkit

// Race is true when the test binary has the race detector.
const Race = true
