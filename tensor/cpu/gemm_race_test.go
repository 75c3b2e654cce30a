//go:build race

package cpu

// raceEnabled: the race detector makes sync.Pool drop items on purpose.
const raceEnabled = true
