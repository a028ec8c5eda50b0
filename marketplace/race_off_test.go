//go:build !race

package marketplace

const raceEnabled = false
