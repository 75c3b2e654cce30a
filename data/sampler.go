package data

import "fmt"

// SamplerState is everything a Sampler needs to continue where it stopped;
// it is small and JSON-serialisable for checkpoints.
type SamplerState struct {
	Seed  uint64 `json:"seed"`
	N     int    `json:"n"`     // dataset size
	Epoch int    `json:"epoch"` // current epoch, from 0
	Pos   int    `json:"pos"`   // next position in the epoch's permutation
}

// Sampler draws example indices in a seeded random order, epoch after epoch.
// Epoch k's order is Permutation(N, epochSeed(Seed, k)). A batch that reaches
// the end of an epoch is completed from the start of the next, so every
// batch has the requested size and no example is dropped.
type Sampler struct {
	st   SamplerState
	perm []int // permutation of the current epoch
}

// NewSampler starts at epoch 0 over n examples.
func NewSampler(n int, seed uint64) (*Sampler, error) {
	return ResumeSampler(SamplerState{Seed: seed, N: n})
}

// ResumeSampler continues from a saved state, giving the same batches the
// original sampler would have given.
func ResumeSampler(st SamplerState) (*Sampler, error) {
	if st.N <= 0 || st.Epoch < 0 || st.Pos < 0 || st.Pos > st.N {
		return nil, fmt.Errorf("sampler state %+v is invalid (want n > 0, 0 <= pos <= n, epoch >= 0)", st)
	}
	return &Sampler{st: st, perm: Permutation(st.N, epochSeed(st.Seed, st.Epoch))}, nil
}

// epochSeed derives one epoch's permutation seed from the run's seed.
func epochSeed(seed uint64, epoch int) uint64 {
	r := NewRand(seed ^ uint64(epoch)*0x9e3779b97f4a7c15)
	return r.Uint64()
}

// State returns the state to save in a checkpoint.
func (s *Sampler) State() SamplerState { return s.st }

// Next returns the next batch of size indices.
func (s *Sampler) Next(size int) []int {
	out := make([]int, 0, size)
	for len(out) < size {
		if s.st.Pos == s.st.N {
			s.st.Epoch++
			s.st.Pos = 0
			s.perm = Permutation(s.st.N, epochSeed(s.st.Seed, s.st.Epoch))
		}
		out = append(out, s.perm[s.st.Pos])
		s.st.Pos++
	}
	return out
}
