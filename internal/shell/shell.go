// Package shell writes words of a POSIX shell's command line.
package shell

import "strings"

// Quote writes s as one word of a POSIX shell's command line: as it is
// when it holds only characters no shell treats specially, else in single
// quotes (a quote inside as '\”), so that a command the programs print or
// write (a Slurm script, the flags a run's settings became) runs as shown.
func Quote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
