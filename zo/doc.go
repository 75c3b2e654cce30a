// Package zo is the zeroth-order optimization engine: it perturbs groups of
// trainable parameters with noise regenerated from a seed, turns loss
// differences into projected gradients, and steps with MEAZO, ZO-SGD, ZO-Adam,
// R-AdaZO or FZOO, jointly or group by group (block coordinates).
//
// It knows nothing about transformers. A model plugs in through Objective,
// which receives every perturbed variant of one step at once so that it can
// evaluate them in a single batched pass (and reuse work across variants that
// share a prefix of unchanged groups).
//
// The noise contract (docs/ALGORITHMS.md) makes every perturbation value a
// pure function of (run seed, step, direction, group, element index), so runs
// are identical for any number of goroutines and replayable from a checkpoint.
package zo
