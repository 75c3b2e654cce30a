package synth_test

import (
	"fmt"
	"os"

	"github.com/meazo-go/meazo/synth"
)

// A trace of ZO-SGD on f(x) = ½(2x₀² + 8x₁²) with Rademacher directions:
// one JSON line per step, with the step's loss, its projected gradient d
// and the point after the update. (ε and the rate are powers of two, so
// every value here is exact: the same digits on every CPU.)
func ExampleParseTrace() {
	tr, err := synth.ParseTrace([]byte(`{"h": [2, 8], "x0": [1, -1], "optimizer": "zo-sgd",
		"lr": 0.015625, "eps": 0.5, "steps": 3, "seed": 5, "dist": "rademacher"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := tr.Run(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"step":0,"loss":6.25,"d":[-6],"v":null,"x":[1.09375,-0.90625]}
	// {"step":1,"loss":5.7314453125,"d":[5.0625],"v":null,"x":[1.1728515625,-0.8271484375]}
	// {"step":2,"loss":5.362278938293457,"d":[4.271484375],"v":null,"x":[1.239593505859375,-0.760406494140625]}
}
