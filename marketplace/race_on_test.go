//go:build race

package marketplace

// raceEnabled: the race detector slows everything several times over, so
// timing checks are skipped and the big catalog is smaller.
const raceEnabled = true
