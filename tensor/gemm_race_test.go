//go:build race

package tensor

// raceEnabled: the race detector makes sync.Pool drop items on purpose.
const raceEnabled = true
