package cpu

// trainablePath is a path of the element-wise loops of full-parameter ZO
// (trainable_ops.go) and the function that installs it, for the tests and
// benchmarks that run each path the CPU has.
type trainablePath struct {
	name string
	use  func()
}
