package noise

// vectorElems is how many elements the vector path (fillVector) computes
// at a time; 0: there is none on this build, and every value comes from the
// scalar path (blockValues).
const vectorElems = 0

func (Stream) fillVector([]float32, uint64, Dist) { panic("noise: no vector path") }
