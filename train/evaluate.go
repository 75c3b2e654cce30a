package train

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
)

// evalPass is the bookkeeping of one pass over an evaluation set (a
// validation, or a test evaluation, which on a CPU can take long): a
// progress line every `every` once the pass has run that long, and the stop
// poll between batches, so that a signal is answered within a batch, not at
// the end of the pass.
type evalPass struct {
	what        string // "validation of step 500", "test (best)"
	total       int    // examples
	from        int    // examples done before this pass began (a resumed test evaluation)
	every       time.Duration
	start, last time.Time
	note        func(string)  // prints a line; nil: no progress lines
	stop        func() string // the stop poll (Options.Stop); nil: never
	// The examples done by the pass's first batch and when it ended (0:
	// none yet): perExample leaves the first batch's warming up out.
	firstDone int
	firstEnd  time.Time
	end       time.Time // when finish was called (zero: still going)
}

// evalProgressEvery is how often a long evaluation says how far it got.
const evalProgressEvery = 30 * time.Second

func newEvalPass(what string, total int, note func(string), stop func() string) *evalPass {
	now := time.Now()
	return &evalPass{what: what, total: total, every: evalProgressEvery, start: now, last: now, note: note, stop: stop}
}

// stoppedError ends an evaluation that a stop request cut short.
type stoppedError struct{ reason string }

func (e *stoppedError) Error() string { return "stopped by " + e.reason }

// stopReason reports whether err is a stop request's, and its reason.
func stopReason(err error) (string, bool) {
	var s *stoppedError
	if errors.As(err, &s) {
		return s.reason, true
	}
	return "", false
}

// after is called after each batch with the examples done so far. It prints
// a progress line when one is due and, where the pass can stop (canStop),
// returns a *stoppedError if a stop was asked for.
func (p *evalPass) after(done int, canStop bool) error {
	if p == nil {
		return nil
	}
	if p.firstDone == 0 && done > p.from {
		p.firstDone, p.firstEnd = done-p.from, time.Now()
	}
	if canStop && p.stop != nil {
		if reason := p.stop(); reason != "" {
			return &stoppedError{reason}
		}
	}
	if p.note != nil && done < p.total && time.Since(p.last) >= p.every {
		p.last = time.Now()
		elapsed := time.Since(p.start)
		eta := time.Duration(float64(elapsed) / float64(max(done-p.from, 1)) * float64(p.total-done))
		p.note(fmt.Sprintf("%s: %d/%d examples (%s, ETA %s)", p.what, done, p.total, elapsed.Round(time.Second), eta.Round(time.Second)))
	}
	return nil
}

// finish marks the pass's end, so that perExample, asked later (after
// another pass: a check's validation metric follows its loss), times this
// pass alone.
func (p *evalPass) finish() { p.end = time.Now() }

// perExample is the seconds per example of a pass of n examples that has
// ended (at finish, else now): from the end of its first batch where it had
// more (the first pays for warming up: a GPU's first kernels and
// allocations, cold caches), else over the whole pass.
func (p *evalPass) perExample(n int) float64 {
	end := p.end
	if end.IsZero() {
		end = time.Now()
	}
	if p.firstDone > 0 && n > p.firstDone {
		return end.Sub(p.firstEnd).Seconds() / float64(n-p.firstDone)
	}
	return end.Sub(p.start).Seconds() / float64(max(n, 1))
}

// validationLoss is the token-weighted mean cross-entropy over every
// supervised token of the validation set, with whatever adapter m has
// attached, accumulated in float64. With c (not nil), each forward also
// scores the label candidates of the metric examples among its sequences,
// counted into c.acc. A stop request ends it between batches (a
// *stoppedError): the validation is then run again whole.
func validationLoss(m *model.Model, exs []data.Sequence, batchSize, padID int, pass *evalPass, c *valChoices) (float64, error) {
	var sum float64
	var tokens int
	for lo := 0; lo < len(exs); lo += batchSize {
		hi := min(lo+batchSize, len(exs))
		b := data.TrainBatch(exs[lo:hi], padID)
		opts := model.Options{Labels: b.Labels}
		if c != nil {
			opts.Choices, opts.ChoiceAt = c.choices[lo:hi], c.at[lo:hi]
		}
		out, err := m.Forward(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, opts)
		if err != nil {
			return 0, err
		}
		if c != nil {
			c.count(out.ChoiceLoss, lo)
		}
		if out.Tokens > 0 { // no supervised token: its NaN mean would poison the sum
			sum += out.Loss * float64(out.Tokens)
			tokens += out.Tokens
		}
		if err := pass.after(hi, hi < len(exs)); err != nil {
			return 0, err
		}
	}
	if tokens == 0 {
		return 0, fmt.Errorf("the validation set has no supervised token")
	}
	return sum / float64(tokens), nil
}

// evaluator computes a text task's test metric with the model as it is
// (adapter attached or not).
type evaluator struct {
	task         data.Task
	tok          *tokenizer.Tokenizer
	enc          *data.Encoder
	batchSize    int
	maxNewTokens int
	stopIDs      []int
	padID        int
	rougeStem    bool
	log          io.Writer
	// split names the examples scored, in errors: "test" ("" too), or
	// "validation" (eval.validation_metrics: validationMetrics).
	split string
	// record, if set, is handed each text example's Prediction as it is
	// scored (Evaluate's EvalOptions.OnPrediction).
	record func(Prediction)
}

// evalPartial is how far a test evaluation got: the examples done and the
// running sums of their scores (SST-2, classification: correct answers;
// SQuAD: EM, F1; XSum: the ROUGE-1, -2, -L and -Lsum F-measures; generation:
// EM, F1 and the four ROUGE F-measures), added in the order of an
// uninterrupted evaluation, so that one continued from it ends with the
// same bits.
type evalPartial struct {
	Done int       `json:"done"`
	Sums []float64 `json:"sums"`
}

// sumsLen is the number of running sums of a task's evalPartial.
func sumsLen(task data.Task) int {
	return map[data.Task]int{data.SST2: 1, data.SQuAD: 2, data.XSum: 4, data.Pets: 1, data.Classification: 1, data.Generation: 6}[task]
}

// testMetrics returns the task's metrics on exs: SST-2 and classification
// {"accuracy"}, SQuAD {"exact_match","f1"} (0-100), XSum
// {"rouge1","rouge2","rougeL","rougeLsum"} (mean sentence-level F-measures,
// 0-100, without stemming unless asked: HF evaluate's default,
// docs/ALGORITHMS.md's metric rules), generation both SQuAD's and XSum's. It continues
// from part as scoreTest says.
func (e *evaluator) testMetrics(m *model.Model, exs []data.Example, what string, pass *evalPass, part *evalPartial) (map[string]float64, error) {
	return scoreTest(e.log, e.task, what, len(exs), pass, part, func() (map[string]float64, error) {
		return e.score(m, exs, pass, part)
	})
}

// score is the task's metrics on exs, continued from part (initialized:
// scoreTest, validationMetrics): the test evaluation's rules, which
// validationMetrics shares.
func (e *evaluator) score(m *model.Model, exs []data.Example, pass *evalPass, part *evalPartial) (map[string]float64, error) {
	if !e.task.Generates() {
		return e.classify(m, exs, pass, part)
	}
	return e.generative(m, exs, pass, part)
}

// validationMetrics is the task's metrics on the validation examples exs
// (eval.validation_metrics) with m as it is: score, the test evaluation's
// rules, from the start (a validation a stop cuts short runs again whole),
// nothing recorded or logged.
func (e *evaluator) validationMetrics(m *model.Model, exs []data.Example, pass *evalPass) (map[string]float64, error) {
	ve := *e
	ve.split, ve.record = "validation", nil
	return ve.score(m, exs, pass, &evalPartial{Sums: make([]float64, sumsLen(e.task))})
}

// example names an example of the split scored in an error ("test
// example", "validation example").
func (e *evaluator) example() string {
	if e.split == "" {
		return "test example"
	}
	return e.split + " example"
}

// scoreTest runs score, a test evaluation (named what) of n examples of
// task, and logs the metrics it returns. score continues from part (a
// stopped evaluation's; zero: from the start) and keeps it up to date, so
// that when a stop request ends it (a *stoppedError) part says where to go
// on.
func scoreTest(log io.Writer, task data.Task, what string, n int, pass *evalPass, part *evalPartial, score func() (map[string]float64, error)) (map[string]float64, error) {
	start := time.Now()
	if part.Done == 0 || len(part.Sums) != sumsLen(task) {
		*part = evalPartial{Sums: make([]float64, sumsLen(task))}
	}
	if pass != nil {
		pass.from = part.Done
	}
	res, err := score()
	if err == nil {
		fmt.Fprintf(log, "test (%s, %d examples, %.0fs): %s\n", what, n, time.Since(start).Seconds(), FormatMetrics(res))
	}
	return res, err
}

// classify scores every label candidate of every example (SST-2's two, a
// classification's task.labels) by the mean log-probability of its label
// tokens (docs/ALGORITHMS.md's data protocol) and reports accuracy. The
// candidates' sequences (labelCandidates: one per example, or k) are
// batched as one list, so a pass can stop only after a batch that ends on a
// whole example.
func (e *evaluator) classify(m *model.Model, exs []data.Example, pass *evalPass, part *evalPartial) (map[string]float64, error) {
	c, err := e.candidateSeqs(exs, e.example())
	if err != nil {
		return nil, err
	}
	labels, k := c.labels, len(c.labels)
	scores := make([]float64, k*len(exs))
	next := part.Done // the first example not yet counted
	for lo := k * part.Done / c.per; lo < len(c.seqs); lo += e.batchSize {
		hi := min(lo+e.batchSize, len(c.seqs))
		if err := e.scoreCandidates(m, c, lo, hi, scores); err != nil {
			var nf *nonFiniteScore
			if errors.As(err, &nf) {
				return nil, nonFiniteAnswer(e.example(), exs[nf.i/k].ID, labels[nf.i%k], nf.loss)
			}
			return nil, err
		}
		for ; k*next+k <= hi*c.per; next++ {
			ex := exs[next]
			pred := eval.PredictLabel(scores[k*next : k*next+k])
			if pred == ex.Label {
				part.Sums[0]++
			}
			if e.record != nil {
				e.record(labelledPrediction(ex.ID, exampleInput(ex), pred, ex.Label, labels))
			}
		}
		part.Done = next
		// A stop after a batch that splits an example would resume on batches
		// of other shapes, which a backend may compute differently in the last
		// bits (the CPU's do not; a GPU library may choose another algorithm).
		if err := pass.after(next, (hi*c.per)%k == 0 && hi < len(c.seqs)); err != nil {
			return nil, err
		}
	}
	return map[string]float64{"accuracy": part.Sums[0] / float64(len(exs))}, nil
}

// generative decodes greedily from each example's generation prompt and
// scores the extracted answer (SQuAD EM/F1, XSum ROUGE, generation both).
func (e *evaluator) generative(m *model.Model, exs []data.Example, pass *evalPass, part *evalPartial) (map[string]float64, error) {
	for lo := part.Done; lo < len(exs); lo += e.batchSize {
		chunk := exs[lo:min(lo+e.batchSize, len(exs))]
		preds, _, err := e.answers(m, chunk)
		if err != nil {
			return nil, err
		}
		for i, ex := range chunk {
			if err := e.scoreGenerated(ex, preds[i], part.Sums); err != nil {
				return nil, err
			}
		}
		part.Done = lo + len(chunk)
		if err := pass.after(part.Done, part.Done < len(exs)); err != nil {
			return nil, err
		}
	}
	return e.generatedMetrics(part.Sums, len(exs)), nil
}

// answers are the answers m generates for chunk, one generation batch:
// greedy decoding from each example's generation prompt, up to
// e.maxNewTokens tokens or a stop id, with the task's answer prefix taken
// off (what is scored). steps is the generation's forwards (the prompt's
// and one per new token but the last). The test evaluation and
// train.objective f1 (f1Objective) both generate through it.
func (e *evaluator) answers(m *model.Model, chunk []data.Example) (preds []string, steps int, err error) {
	prompts := make([][]int, len(chunk))
	for i, ex := range chunk {
		_, ids, err := e.enc.EncodePrompt(ex)
		if err != nil {
			return nil, 0, err
		}
		prompts[i] = ids
	}
	b := data.GenerateBatch(prompts, e.padID)
	outs, err := m.Generate(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask},
		model.GenerateOptions{MaxNewTokens: e.maxNewTokens, StopIDs: e.stopIDs})
	if err != nil {
		return nil, 0, err
	}
	preds = make([]string, len(chunk))
	for i := range chunk {
		preds[i] = eval.ExtractAnswer(Continuation(e.tok, outs[i], e.stopIDs), answerPrefix(e.task))
		steps = max(steps, len(outs[i]))
	}
	return preds, max(steps, 1), nil
}

// EvalOptions configures Evaluate.
type EvalOptions struct {
	// Adapter is a saved adapter directory (PEFT LoRA or prompt tuning, as a
	// run's best/) to evaluate m with; empty: m as it is.
	Adapter      string
	Merge        bool   // LoRA: evaluate on a copy of m with the adapter merged into its weights (faster generation)
	Task         string // sst2, squad, xsum, classification or generation
	Data         string // the test file (any format the data package reads)
	MaxExamples  int    // first N examples (0: all)
	BatchSize    int    // default 8
	MaxNewTokens int    // default: SQuAD 50, XSum and generation 100
	DateString   string // Llama-3.x date_string (default 26 Jul 2024)
	RougeStem    bool   // XSum, generation: Porter-stem tokens (off by default, as HF evaluate)
	Strict       bool   // stop at the first malformed row (task.strict) instead of skipping it
	// Labels are a classification's classes (task.labels), Instruction the
	// system turn of a classification or generation (task.instruction).
	Labels      []string
	Instruction string
	// MaxLength skips the examples whose evaluation would take more tokens
	// (as task.max_length: the prompt plus MaxNewTokens for SQuAD, XSum and
	// generation, the longest answer for SST-2 and classification); 0: none
	// skipped.
	MaxLength int
	Format    string // how examples become text (task.format): chat (default) or mezo
	Threads   int    // image tasks (EvaluateImages): workers that decode the images (0: all cores)
	Log       io.Writer
	// OnPrediction, if set, is called with each evaluated example's
	// Prediction, in the data's order, as it is scored: the model's answer,
	// and a generation's own metrics, whose means are the aggregate's.
	OnPrediction func(Prediction)
}

// Evaluate computes a task's test metrics for m, with the saved adapter
// o.Adapter if one is named (m as it is otherwise), as meazo-train does at
// the end of a run.
func Evaluate(m *model.Model, tok *tokenizer.Tokenizer, o EvalOptions) (map[string]float64, error) {
	task, own, err := o.task()
	if err != nil {
		return nil, err
	}
	format, err := data.ParseFormat(o.Format)
	if err != nil {
		return nil, err
	}
	// The fix named is meazo-eval's flag, the caller users meet (EvalOptions.Format).
	if err := checkChatTemplate(tok, format, task, "--format mezo"); err != nil {
		return nil, err
	}
	if err := CheckVocab(tok, m); err != nil {
		return nil, err
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 8
	}
	if o.MaxNewTokens <= 0 {
		o.MaxNewTokens = defaultMaxNewTokens(task)
	}
	if o.DateString == "" {
		o.DateString = tokenizer.DefaultDateString
	}
	var adapter trainable
	var params [][]float32 // nil: the base model
	if o.Adapter != "" {
		if adapter, err = openAdapter(o.Adapter, m, false); err != nil {
			return nil, err
		}
		params = adapter.Params()
	}
	opt := data.ReadOptions{Limit: o.MaxExamples, Strict: o.Strict, Own: own, OnSkip: rowWarner(o.Log)}
	exs, st, err := readExamples("--data", o.Data, task, opt, "--max-examples N evaluates its first N examples only")
	if err != nil {
		return nil, err
	}
	warnShards(o.Log, "--data", o.Data)
	if task.OwnData() {
		warnUnreadKeys(o.Log, o.Data, task, st)
		warnRepeatedIDs(o.Log, "test", o.Data, exs)
	}
	enc := &data.Encoder{Tok: tok, DateString: o.DateString, Format: format}
	if err := warnDroppedInstruction(enc, o.Instruction, "--instruction", o.Log); err != nil {
		return nil, err
	}
	virtual := 0 // prompt tuning's tokens take positions before every example's
	if pa, ok := adapter.(*promptAdapter); ok {
		virtual = pa.p.N
	}
	maxLength, lengthName, note, err := positionRule(m, o.MaxLength, virtual, "--max-length")
	if err != nil {
		return nil, fmt.Errorf("adapter %s: %w", o.Adapter, err)
	}
	if note != "" {
		fmt.Fprintln(o.Log, note)
	}
	if exs, err = newLengthRule(maxLength, lengthName, enc).fitTest("test", exs, enc, o.MaxNewTokens, o.Log, nil); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Data, err)
	}
	if exs, err = fitRouge("test", task, exs, o.Log); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Data, err)
	}
	fmt.Fprintf(o.Log, "evaluating on %d examples of %s (%d malformed rows skipped)\n", len(exs), o.Data, st.Skipped)
	e := &evaluator{task: task, tok: tok, enc: enc, batchSize: o.BatchSize,
		maxNewTokens: o.MaxNewTokens, stopIDs: StopIDs(tok, m), padID: tok.PadID(), rougeStem: o.RougeStem, log: o.Log, record: o.OnPrediction}
	pass := newEvalPass("evaluation", len(exs), func(s string) { fmt.Fprintln(o.Log, s) }, nil)
	var res map[string]float64
	err = withAdapter(m, adapter, params, o.Merge, func(m *model.Model) (err error) {
		res, err = e.testMetrics(m, exs, "evaluation", pass, &evalPartial{})
		return err
	})
	return res, err
}

// defaultMaxNewTokens is the generation cap of docs/ALGORITHMS.md's data
// protocol: SQuAD 50, XSum 100; generation XSum's, the longer.
func defaultMaxNewTokens(task data.Task) int {
	return map[data.Task]int{data.SQuAD: 50, data.XSum: 100, data.SST2: 1, data.Classification: 1, data.Generation: 100}[task]
}

// maxNewTokens is a run's generation cap: eval.max_new_tokens, or (0) the
// task's default.
func (c *Config) maxNewTokens() int {
	if c.Eval.MaxNewTokens > 0 {
		return c.Eval.MaxNewTokens
	}
	return defaultMaxNewTokens(data.Task(c.Task.Name))
}

// CheckTask checks the task and, for one on the user's own data, its
// labels and instruction, as Evaluate does first: a command calls it before
// it loads a model.
func (o EvalOptions) CheckTask() error {
	_, _, err := o.task()
	return err
}

// task is the task Evaluate scores and, for one on the user's own data, its
// labels and instruction; they are refused for the paper's tasks (as the
// config's keys are). The settings named are meazo-eval's flags.
func (o EvalOptions) task() (data.Task, *data.OwnTask, error) {
	task, err := data.ParseTask(o.Task)
	if err != nil {
		return "", nil, err
	}
	// As task.format (Config.Check): refused before the model loads and any
	// data is read, not at the first example, named as if it were at fault.
	if o.Format == string(data.FormatMeZO) && task != data.SST2 {
		return "", nil, fmt.Errorf("--format mezo has only SST-2's template (MeZO's), not task %s: use --format chat with a model that has a chat template", task)
	}
	own := ownTask(task, o.Labels, o.Instruction)
	switch {
	case own == nil && (len(o.Labels) > 0 || o.Instruction != ""):
		return "", nil, fmt.Errorf("--labels and --instruction are for tasks classification and generation; task %s has the paper's", task)
	case own == nil:
		return task, nil, nil
	}
	if err := own.Check(task); err != nil {
		return "", nil, fmt.Errorf("--labels: %w", err)
	}
	return task, own, nil
}

// StopIDs are the ids that end a generation in evaluation: the
// tokenizer's end-of-turn ids plus the model's (Model.StopIDs: HF's,
// generation_config.json's eos ids where the checkpoint has that file,
// else config.json's).
func StopIDs(tok *tokenizer.Tokenizer, m *model.Model) []int {
	stops := slices.Clone(tok.StopIDs())
	seen := map[int]bool{}
	for _, id := range stops {
		seen[id] = true
	}
	for _, id := range m.StopIDs() { // as many as the vocabulary: a set, not a search each
		if !seen[id] {
			seen[id] = true
			stops = append(stops, id)
		}
	}
	return stops
}

// Continuation is a generated continuation's text as evaluation reads it:
// its ids (Model.Generate's, up to and including the stop token that ended
// them) without that stop token, decoded as transformers'
// decode(skip_special_tokens=True) does.
func Continuation(tok *tokenizer.Tokenizer, ids, stops []int) string {
	if n := len(ids); n > 0 && slices.Contains(stops, ids[n-1]) {
		ids = ids[:n-1]
	}
	return tok.DecodeHF(ids, true)
}
