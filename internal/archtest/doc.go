// Package archtest holds the test that keeps docs/ARCHITECTURE.md's import
// table equal to the module's real import graph. It has no code of its own.
package archtest
