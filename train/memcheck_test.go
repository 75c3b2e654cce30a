package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/model"
)

func TestCheckBatchMemory(t *testing.T) {
	// Qwen3-0.6B at 16×64, q = 1: 16·64·(24 + 2·4·7168) bytes, 56.0 MiB.
	text := textFloor(16, 64, 0, 1, false, 1024, 3072)
	for _, tc := range []struct {
		name   string
		f      stepFloor
		onHost bool
		total  uint64
		want   string
	}{
		{"fits", text, true, 1 << 30, ""},
		{"too large on the host", text, true, 40 << 20, "train.batch_size 16: one step needs at least 56.0 MiB (16 examples of up to 64 tokens each), more than this machine's 40.0 MiB"},
		{"on a device: the batch's arrays alone", text, false, 20 << 20, ""},
		{"unknown memory", textFloor(1e9, 21, 0, 1, false, 64, 128), true, 0, ""},
		{"a typo", textFloor(1e9, 21, 0, 1, false, 64, 128), false, 24 << 30, "train.batch_size 1000000000: one step needs at least 469.4 GiB"},
		{"virtual tokens", textFloor(8, 21, 1e9, 1, false, 64, 128), false, 24 << 30, "train.batch_size 8, adapter.virtual_tokens 1000000000: one step needs at least"},
		{"virtual tokens that fit", textFloor(8, 21, 20, 1, false, 64, 128), true, 1 << 30, ""},
		// The demo's model (64 wide, MLP 128) at q = 65,536: 131,072
		// variants of 8 rows in one forward, which grew past 19 GiB.
		{"many directions", textFloor(8, 21, 0, 65536, false, 64, 128), true, 16 << 30,
			"train.batch_size 8, optimizer.q 65536: one step needs at least 26.3 GiB (131072 variants at once of 8 examples of up to 21 tokens each), more than this machine's 16.0 GiB of memory; use a smaller batch or fewer directions"},
		{"FZOO's q+1", textFloor(8, 21, 0, 65536, true, 64, 128), true, 16 << 30, ""},
		{"images", imageFloor(32, 224, 16, 768, 3072), true, 1 << 30, ""},
		{"images, too many", imageFloor(1e6, 224, 16, 768, 3072), true, 64 << 30, "(1000000 examples of up to 197 tokens each)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBatchMemory(tc.f.rows, tc.f, tc.onHost, tc.total)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestBatchTooLargeForMemory: a batch size no machine could hold, or a
// prompt of as many virtual tokens, is refused before the run writes
// anything (the batch died out of memory after step 0's checkpoint; the
// prompt as it was made, leaving a run directory behind).
func TestBatchTooLargeForMemory(t *testing.T) {
	if sysmem.Total() == 0 {
		t.Skip("the machine's memory cannot be read here (no /proc/meminfo)")
	}
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"train.batch_size=1000000000"}, "train.batch_size 1000000000: one step needs at least"},
		{[]string{"adapter.kind=prompt", "adapter.virtual_tokens=1000000000"}, "adapter.virtual_tokens 1000000000: one step needs at least"},
	} {
		dir, cfg := demoConfig(t, 1)
		out := filepath.Join(dir, "run")
		set := append(append(slices.Clone(trustSet), c.set...), "output.dir="+out)
		_, err := Run(Options{ConfigPath: cfg, Overrides: set})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%v: error %v, want it refused", c.set, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%v: the refused run left %s behind (%v)", c.set, out, err)
		}
	}
}

// TestTestGenerationTooLargeForMemory: a generation cap whose test
// evaluation's key/value cache cannot fit is refused before the run
// writes anything, not after it trained to the end (with task.max_length
// 0 no length rule skips the test examples first).
func TestTestGenerationTooLargeForMemory(t *testing.T) {
	if sysmem.Total() == 0 {
		t.Skip("the machine's memory cannot be read here (no /proc/meminfo)")
	}
	dir, cfg := demoConfig(t, 1)
	generate := func(i int, ex data.Example) map[string]any {
		return map[string]any{"id": i, "prompt": "Review: " + ex.Sentence, "completion": data.SST2LabelWords[ex.Label]}
	}
	train, test := demoRows(t, dir, "train", "generation", generate), demoRows(t, dir, "dev", "generation", generate)
	for _, c := range []struct {
		maxNew string
		want   string // "": the run goes through
		set    []string
	}{
		{"2000000000", "eval.max_new_tokens 2000000000: the test evaluation's key/value cache of 4 sequences needs at least", nil},
		{"2", "", nil},
		// train.objective f1 generates at every step: refused without a test evaluation too.
		{"2000000000", "eval.max_new_tokens 2000000000: the key/value cache of train.objective f1's generation of 2 sequences (a step's answers) needs at least",
			[]string{"eval.skip=true", "train.objective=f1", "train.batch_size=2"}},
		{"2", "", []string{"eval.skip=true", "train.objective=f1", "train.batch_size=2"}},
		// eval.validation_metrics generates at every validation: refused without a test evaluation too.
		{"2000000000", "eval.max_new_tokens 2000000000: the validation metric's (eval.validation_metrics) key/value cache of 4 sequences needs at least",
			[]string{"eval.skip=true", "eval.validation_metrics=true"}},
	} {
		out := filepath.Join(dir, fmt.Sprintf("run-%s-%d", c.maxNew, len(c.set)))
		set := append(slices.Clone(trustSet), "eval.skip=false", "task.name=generation", "task.train="+train, "task.test="+test,
			"task.instruction=Answer.", "task.max_length=0", "task.max_train=16", "task.max_validation=4", "task.max_test=4",
			"eval.batch_size=8", "eval.max_new_tokens="+c.maxNew, "output.dir="+out)
		_, err := Run(Options{ConfigPath: cfg, Overrides: append(set, c.set...)})
		if c.want == "" {
			if err != nil {
				t.Errorf("eval.max_new_tokens %s: %v", c.maxNew, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("eval.max_new_tokens %s: error %v, want it refused", c.maxNew, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("the refused run left %s behind (%v)", out, err)
		}
	}
}

// TestAdapterTooLargeForMemory: a LoRA adapter whose copies in a step
// cannot fit the machine is refused with its figures before it is made;
// the paper's adapter and all-linear at r 16 of Qwen3-8B fit 24 GiB. At r
// 4096 on q_proj and v_proj: 36 layers × 4096 × ((4096 + 4096) + (4096 +
// 1024)) = 1,962,934,272 parameters; on all seven, 36 × 4096 × 75,776.
func TestAdapterTooLargeForMemory(t *testing.T) {
	p, _ := model.LookupPublished("qwen3-8b")
	c, err := p.Config()
	if err != nil {
		t.Fatal(err)
	}
	const total = 24 << 30
	for _, tc := range []struct {
		r       int
		targets []string
		q       int
		want    string
	}{
		{16, []string{"q_proj", "v_proj"}, 1, ""},
		{16, []string{"all-linear"}, 16, ""},
		{4096, []string{"q_proj", "v_proj"}, 1, "adapter.r 4096 on [q_proj v_proj]: the adapter's 1,962,934,272 parameters need at least 29.2 GiB in the 4 float32 copies a step holds (the parameters, 2 perturbed points, the best), more than this machine's 24.0 GiB of memory"},
		{4096, []string{"all-linear"}, 1, "the adapter's 11,173,625,856 parameters"},
	} {
		err := adapterMemory(c, AdapterConfig{Kind: "lora", R: tc.r, Alpha: 16, Targets: tc.targets}, tc.q, total)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("r %d on %v, q %d: %v, want %q", tc.r, tc.targets, tc.q, err, tc.want)
		}
	}
}

// TestAdapterInitTooLargeForMemory: an adapter.init whose copies in a step
// cannot fit is refused before the run writes anything, as a fresh adapter
// of its rank and targets is (it was let through, and died out of memory in
// its first step). The demo's model with r 64 on every projection holds
// 131,072 parameters, 512 KiB a copy; q is chosen for twice the machine's
// memory in the 2q + 2 copies, while the batch of one row (about 27 KB a
// variant) stays far below it.
func TestAdapterInitTooLargeForMemory(t *testing.T) {
	total := sysmem.Total()
	if total == 0 {
		t.Skip("the machine's memory cannot be read here (no /proc/meminfo)")
	}
	dir, cfg := demoConfig(t, 1)
	lora64 := []string{"adapter.r=64", "adapter.targets=[all-linear]"}
	first := filepath.Join(dir, "first")
	if _, err := Run(Options{ConfigPath: cfg, Overrides: append(append(slices.Clone(trustSet), lora64...), "output.dir="+first)}); err != nil {
		t.Fatal(err)
	}
	q := strconv.FormatUint(total>>19, 10)
	out := filepath.Join(dir, "run")
	set := append(append(slices.Clone(trustSet), lora64...), "adapter.init="+filepath.Join(first, "best"),
		"train.batch_size=1", "optimizer.q="+q, "output.dir="+out)
	_, err := Run(Options{ConfigPath: cfg, Overrides: set})
	want := "adapter.r 64 on [all-linear]: the adapter's 131,072 parameters need at least"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("optimizer.q %s from adapter.init: error %v, want %q", q, err, want)
	}
	if !strings.Contains(err.Error(), "or a smaller optimizer.q") {
		t.Errorf("the refusal does not name optimizer.q, which made it too large: %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused run left %s behind (%v)", out, err)
	}
}

// TestF1StepFloor: a train.objective f1 step evaluates its variants one at
// a time, generating for eval.batch_size examples at once, so its floor is
// one variant's of that batch, not the 2q variants of the batched
// cross-entropy forward (which refused f1 runs of a large q that fit).
func TestF1StepFloor(t *testing.T) {
	c := &model.Config{HiddenSize: 64, IntermediateSize: 256}
	train := []data.Sequence{{IDs: make([]int32, 40)}, {IDs: make([]int32, 90)}}
	cfg := Defaults()
	cfg.Train.BatchSize, cfg.Eval.BatchSize, cfg.Optimizer.Q = 16, 4, 50000
	loss := textStepFloor(&cfg, train, c)
	cfg.Train.Objective = ObjectiveF1
	f1 := textStepFloor(&cfg, train, c)
	if loss.variants != 100000 || loss.rows != 16 {
		t.Errorf("loss: %d variants of %d rows, want 100000 of 16", loss.variants, loss.rows)
	}
	if f1.variants != 1 || f1.rows != 4 || f1.q != 0 || f1.tokens != 90 {
		t.Errorf("f1: %d variants of %d rows of %d tokens (q %d), want 1 of 4 of 90 (q not named)", f1.variants, f1.rows, f1.tokens, f1.q)
	}
	if err := checkBatchMemory(cfg.Train.BatchSize, f1, true, 1<<30); err != nil {
		t.Errorf("f1 with q 50000 on 1 GiB: %v", err)
	}
	if err := checkBatchMemory(cfg.Train.BatchSize, loss, true, 1<<30); err == nil {
		t.Error("loss with q 50000 on 1 GiB: not refused")
	}
}
