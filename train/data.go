package train

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/internal/bytesize"
	"github.com/meazo-go/meazo/internal/parallel"
	"github.com/meazo-go/meazo/internal/sysmem"
	"github.com/meazo-go/meazo/tokenizer"
)

// textSplits are a text task's data: encoded train and validation
// examples (their ids and supervised run only: data.Sequence), and the raw
// test examples (evaluated by generation or label scoring).
type textSplits struct {
	train, val []data.Sequence
	test       []data.Example
	// valEx are the validation examples eval.validation_metrics scores: those
	// of val (in its order) that the test evaluation's rules let be scored
	// (scorable); nil when it is off.
	valEx []data.Example
	// trainEx are the examples encoded as train, in its order, for
	// train.objective f1 or accuracy (which generates their answers or
	// predicts their labels); nil otherwise.
	trainEx []data.Example
}

// checkChatTemplate refuses a tokenizer without a chat template before any
// data is read when the examples are rendered with it (format chat), so
// that the first example does not fail, named as if it were at fault.
// setting is how the caller's user chooses the format (task.format mezo,
// meazo-eval's --format mezo), for the fix the error names: it is the fix
// for SST-2 only, MeZO's one template, so for another task the error says
// that the task needs a chat template (not a fix the next check refuses).
func checkChatTemplate(tok *tokenizer.Tokenizer, format data.Format, task data.Task, setting string) error {
	if format == data.FormatMeZO || tok.HasChatTemplate() {
		return nil
	}
	if task == data.SST2 {
		return fmt.Errorf("%w (a model without one, such as OPT, takes %s: MeZO's SST-2 template)", tokenizer.ErrNoChatTemplate, setting)
	}
	return fmt.Errorf("%w (task %s is rendered with it: a model without one, such as OPT, runs only SST-2, with %s)", tokenizer.ErrNoChatTemplate, task, setting)
}

// warnDroppedInstruction warns when the model's chat template leaves the
// instruction (key: task.instruction, meazo-eval's --instruction) out of
// every prompt: the run trains and scores without it, which nothing else
// would show (the built-in demo's template has no system turn).
func warnDroppedInstruction(enc *data.Encoder, instruction, key string, log io.Writer) error {
	dropped, err := enc.InstructionDropped(instruction)
	if err != nil {
		return fmt.Errorf("%s: %w", key, err)
	}
	if dropped {
		fmt.Fprintf(log, "warning: %s is left out of every prompt: the model's chat template writes no system turn, so the model never reads it "+
			"(put it into each row's text, or use a model whose template has a system turn)\n", key)
	}
	return nil
}

// noExamples refuses a data file that gave no example at all, before any
// filtering (which would otherwise be blamed): one with a header and no
// rows, or with every row malformed.
func noExamples(key, path string, st data.ReadStats) error {
	switch {
	case st.Examples > 0:
		return nil
	case st.Skipped > 0:
		return fmt.Errorf("%s %s: no usable example: every row is malformed (%d; the warnings above say why)", key, path, st.Skipped)
	}
	return fmt.Errorf("%s %s: no examples in the file", key, path)
}

// readExamples reads the examples of the file the setting key names, all
// of them or opt.Limit's first, and refuses a file without a usable one;
// without a limit, first a file larger than the memory available
// (checkHeld; fix says what to do instead).
func readExamples(key, path string, task data.Task, opt data.ReadOptions, fix string) ([]data.Example, data.ReadStats, error) {
	if opt.Limit == 0 { // with one, the read stops there
		if err := checkHeld(key, path, fix); err != nil {
			return nil, data.ReadStats{}, err
		}
	}
	exs, st, err := data.ReadAll(path, task, opt)
	if err != nil {
		return nil, st, err
	}
	return exs, st, noExamples(key, path, st)
}

// warnShards warns that a data file is one shard of a split the HF hub
// split into several (data.OtherShards): a data file names one file, so
// the run reads part of the split, and its metric is not the split's.
func warnShards(log io.Writer, key, path string) {
	others := data.OtherShards(path)
	if len(others) == 0 {
		return
	}
	more := ""
	if len(others) > 1 {
		more = fmt.Sprintf(" and %d more", len(others)-1)
	}
	fmt.Fprintf(log, "warning: %s %s is one shard of a split: %s%s beside it, which this run does not read (one file a key: join the shards into one file to use the whole split)\n",
		key, path, others[0], more)
}

// checkHeld refuses a data file larger than the memory this machine has
// available, saying what to do instead (fix): a run holds every example
// of the file in memory (the validation split is drawn from all of
// task.train's rows, before task.max_train keeps the first), so such a
// file would end, after minutes of reading, with the process killed for
// memory instead of an error. A file that fits may still not fit with the
// model; this catches the hopeless case at once. Where the memory cannot
// be read, nothing is checked.
func checkHeld(key, path, fix string) error {
	st, err := os.Stat(path)
	if path == "" || err != nil {
		return nil // the read says what is wrong
	}
	avail, ok := availableMemory()
	if !ok || st.Size() <= int64(avail) {
		return nil
	}
	return fmt.Errorf("%s %s is %s, more than the %s of memory this machine has available: every example of it would be "+
		"held in memory; %s", key, path, bytesize.String(st.Size()), bytesize.String(int64(avail)), fix)
}

// trainPart is checkHeld's fix for the training and validation files.
const trainPart = "train on a part of it (a copy of its first rows: head -n 100000 for JSON Lines)"

// availableMemory is sysmem.Available (a var for tests).
var availableMemory = sysmem.Available

// loadSplits reads the task's files and draws the paper's splits
// (docs/ALGORITHMS.md, the data protocol): SST-2 and SQuAD hold out 5% of train (a permutation
// seeded by task.data_seed) as validation, and so do the tasks on the
// user's own data without a validation file; examples longer than
// maxLength tokens after chat rendering are dropped (task.max_length, or
// less: positionRule; lengthName names it), then the first max_train /
// max_validation are kept. stop is polled while the examples are encoded
// (minutes for a large dataset): a non-nil error ends the load.
func loadSplits(cfg *Config, maxLength int, lengthName string, enc *data.Encoder, log io.Writer, stop func(while string) error) (*textSplits, error) {
	task := data.Task(cfg.Task.Name)
	spec, maxTrain, maxVal := splitLimits(cfg, task)
	if err := warnDroppedInstruction(enc, cfg.Task.Instruction, "task.instruction", log); err != nil {
		return nil, err
	}
	opt := data.ReadOptions{Strict: cfg.Task.Strict, Own: cfg.own(), OnSkip: rowWarner(log)}

	all, st, err := readExamples("task.train", cfg.Task.Train, task, opt, trainPart)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "read %d training examples from %s (%d malformed rows skipped)\n", st.Examples, cfg.Task.Train, st.Skipped)
	warnShards(log, "task.train", cfg.Task.Train)
	if task == data.Classification {
		logLabels(log, "train", cfg.Task.Train, all, cfg.Task.Labels)
	}
	if task.OwnData() {
		warnUnreadKeys(log, cfg.Task.Train, task, st)
		warnRepeatedIDs(log, "train", cfg.Task.Train, all)
		warnRepeats(log, cfg.Task.Train, all)
	}
	trainEx, valEx := all, []data.Example(nil)
	if cfg.Task.Validation != "" {
		opt.OnSkip = rowWarner(log)
		if valEx, st, err = readExamples("task.validation", cfg.Task.Validation, task, opt, trainPart); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "read %d validation examples from %s (%d skipped)\n", st.Examples, cfg.Task.Validation, st.Skipped)
		warnShards(log, "task.validation", cfg.Task.Validation)
		if task.OwnData() {
			warnUnreadKeys(log, cfg.Task.Validation, task, st)
			warnRepeatedIDs(log, "validation", cfg.Task.Validation, valEx)
			warnOverlap(log, "validation", cfg.Task.Validation, valEx, all)
		}
	} else {
		if spec.ValidationFraction == 0 {
			return nil, fmt.Errorf("task.validation is required for %s (it has its own validation split)", task)
		}
		tr, va, err := data.TrainValidation(len(all), data.SplitSpec{ValidationFraction: spec.ValidationFraction}, cfg.Task.DataSeed)
		if err != nil {
			return nil, err
		}
		trainEx, valEx = data.Select(all, tr), data.Select(all, va)
	}
	s := &textSplits{}
	rule := newLengthRule(maxLength, lengthName, enc)
	var scored *scoredAs // train.objective f1 or accuracy scores the training examples: they must fit as test examples do
	if cfg.Train.scoresExamples() {
		scored = &scoredAs{objective: cfg.Train.Objective, maxNew: cfg.maxNewTokens()}
	}
	if s.train, s.trainEx, err = encodeKept(trainEx, enc, rule, maxTrain, cfg.Train.Threads, cfg.Task.Strict, "train", scored, false, log, stop); err != nil {
		return nil, err
	}
	keepVal := cfg.Eval.ValidationMetrics
	if s.val, s.valEx, err = encodeKept(valEx, enc, rule, maxVal, cfg.Train.Threads, cfg.Task.Strict, "validation", nil, keepVal, log, stop); err != nil {
		return nil, err
	}
	if err := checkSplits(cfg, spec, s, len(all), len(trainEx), len(valEx), lengthName, maxLength); err != nil {
		return nil, err
	}
	if keepVal {
		if s.valEx, err = scorable(cfg, "validation", s.valEx, enc, rule, log, stop); err != nil {
			return nil, noneScorable(err)
		}
	}
	if task.OwnData() && cfg.Task.Validation == "" {
		warnSmallValidation(log, len(s.val), cfg.Task.Train)
	}
	if cfg.Task.Test != "" && !cfg.Eval.Skip {
		if s.test, err = loadTest(cfg, enc, rule, opt, log, stop); err != nil {
			return nil, err
		}
		if task.OwnData() {
			warnOverlap(log, "test", cfg.Task.Test, s.test, all)
		}
	}
	return s, nil
}

// splitLimits is the task's split (the paper's, or own data's) and the
// most training and validation examples kept: the split's limits, or
// task.max_train and task.max_validation where set.
func splitLimits(cfg *Config, task data.Task) (spec data.SplitSpec, maxTrain, maxVal int) {
	spec = data.PaperSplits[task]
	if task.OwnData() {
		spec = data.OwnSplit
	}
	maxTrain, maxVal = spec.MaxTrain, spec.MaxValidation
	if cfg.Task.MaxTrain > 0 {
		maxTrain = cfg.Task.MaxTrain
	}
	if cfg.Task.MaxValidation > 0 {
		maxVal = cfg.Task.MaxValidation
	}
	return spec, maxTrain, maxVal
}

// checkSplits refuses a training or validation split left empty: by too
// few examples in task.train (all of them, trainN and valN before the
// length rule), or by the length rule.
func checkSplits(cfg *Config, spec data.SplitSpec, s *textSplits, all, trainN, valN int, lengthName string, maxLength int) error {
	if (len(s.train) == 0 || len(s.val) == 0) && (trainN == 0 || valN == 0) {
		// Empty before any filtering: too few examples, not too long ones.
		held := ""
		if cfg.Task.Validation == "" {
			held = fmt.Sprintf(", of which %g %% (at least one) are held out for validation (task.validation is empty)", spec.ValidationFraction*100)
		}
		return fmt.Errorf("too few examples: task.train %s has %d usable example(s)%s; that leaves %d for training and %d for validation",
			cfg.Task.Train, all, held, trainN, valN)
	}
	if len(s.train) == 0 || len(s.val) == 0 {
		return fmt.Errorf("empty split after filtering: %d train, %d validation examples within %s %d tokens (task.train %s, task.validation %q)",
			len(s.train), len(s.val), lengthName, maxLength, cfg.Task.Train, cfg.Task.Validation)
	}
	return nil
}

// loadTest reads task.test (its first task.max_test examples) and keeps
// those the length rule lets be evaluated.
func loadTest(cfg *Config, enc *data.Encoder, rule lengthRule, opt data.ReadOptions, log io.Writer, stop func(while string) error) ([]data.Example, error) {
	task := data.Task(cfg.Task.Name)
	opt.Limit = cfg.Task.MaxTest
	opt.OnSkip = rowWarner(log)
	test, st, err := readExamples("task.test", cfg.Task.Test, task, opt, "task.max_test: N evaluates its first N examples only")
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "read %d test examples from %s (%d skipped)\n", st.Examples, cfg.Task.Test, st.Skipped)
	warnShards(log, "task.test", cfg.Task.Test)
	if task.OwnData() {
		warnUnreadKeys(log, cfg.Task.Test, task, st)
		warnRepeatedIDs(log, "test", cfg.Task.Test, test)
	}
	if test, err = scorable(cfg, "test", test, enc, rule, log, stop); err != nil {
		return nil, err
	}
	// Labels the chat template renders alike (it may trim them) are
	// refused now, not after the training, at the test evaluation.
	if task == data.Classification {
		if _, err := enc.Candidates(test[0]); err != nil {
			return nil, fmt.Errorf("task.labels: %w", err)
		}
		logLabels(log, "test", cfg.Task.Test, test, cfg.Task.Labels)
	}
	return test, nil
}

// lengthRule is task.max_length, the rule of every split (docs/CONFIG.md):
// an example longer than max tokens after chat rendering is left out, and
// said so with the count and the first ids. A training or validation
// example is dropped; a test example is skipped when its evaluation would
// exceed max (SST-2, classification: any rendered answer; SQuAD, XSum and
// generation: the generation prompt plus the new tokens), so that the memory of an evaluation batch is
// bounded by the limit, never by the data. An example whose own text is too
// long to fit at all is left out before it is rendered and tokenized. max 0
// turns the rule off.
type lengthRule struct {
	max      int
	maxBytes int    // text longer than this cannot encode to max tokens
	name     string // how the user set max: task.max_length, --max-length
}

func newLengthRule(max int, name string, enc *data.Encoder) lengthRule {
	r := lengthRule{max: max, name: name}
	if tok, ok := enc.Tok.(*tokenizer.Tokenizer); ok && max > 0 {
		// Normalization (NFC) may shorten text: a margin of 4.
		r.maxBytes = 4 * max * tok.MaxTokenBytes()
	}
	return r
}

// tooLong says whether ex, or its n tokens, break the rule (n < 0: not encoded yet).
func (r lengthRule) tooLong(ex data.Example, n int) bool {
	return r.max > 0 && (n > r.max || r.maxBytes > 0 && ex.PromptBytes() > r.maxBytes)
}

// leftOut collects the examples a split leaves out, for its log line.
type leftOut struct {
	n   int
	ids []string // the first few
}

func (l *leftOut) add(id string) {
	if l.n++; len(l.ids) < 5 {
		l.ids = append(l.ids, fmt.Sprintf("%q", id))
	}
}

func (l leftOut) String() string {
	if l.n == 0 {
		return "0"
	}
	more := ""
	if l.n > len(l.ids) {
		more = ", …"
	}
	return fmt.Sprintf("%d: ids %s%s", l.n, strings.Join(l.ids, ", "), more)
}

// encodeFirst encodes examples in order, dropping those the length rule
// refuses, until limit are kept (0: all). A chunk of examples at a time is
// encoded on up to workers goroutines (train.threads; 0: every core), as
// rendering and BPE are most of a dataset's loading time and the tokenizer
// and its chat template are safe for concurrent use; the chunk is then
// taken in order, so the result, the error reported and the count of
// dropped examples are the sequential loop's.
func encodeFirst(exs []data.Example, enc *data.Encoder, rule lengthRule, limit, workers int, strict bool, what string, log io.Writer, stop func(while string) error) ([]data.Sequence, error) {
	out, _, err := encodeKept(exs, enc, rule, limit, workers, strict, what, nil, false, log, stop)
	return out, err
}

// scoredAs is how train.objective f1 or accuracy scores a training
// example: as the test evaluation scores a test example.
type scoredAs struct {
	objective string // ObjectiveF1, ObjectiveAccuracy
	maxNew    int    // f1: the generation's new tokens (eval.max_new_tokens)
}

// evaluation is what the length rule measures of a scored example.
func (s *scoredAs) evaluation() string {
	if s.objective == ObjectiveAccuracy {
		return "longest label candidate for train.objective accuracy"
	}
	return fmt.Sprintf("generation for train.objective f1 (the prompt and %d new tokens)", s.maxNew)
}

// encodeKept is encodeFirst that also returns the examples it kept, in
// order (kept[i] is encoded as seqs[i]), for the training split of
// train.objective f1 or accuracy (scored), which generates answers for
// them or predicts their labels, and (keep) for the validation split of
// eval.validation_metrics. With scored it also drops the examples whose
// evaluation (the prompt and maxNew new tokens, or the longest label
// candidate, as a test example's: fitTest) the length rule refuses.
func encodeKept(exs []data.Example, enc *data.Encoder, rule lengthRule, limit, workers int, strict bool, what string, scored *scoredAs, keep bool, log io.Writer, stop func(while string) error) (seqs []data.Sequence, kept []data.Example, err error) {
	// The examples go in chunks of 512, the first of a few: a chat template
	// that fails on every example (a render that fails can take 60 ms, a
	// recursion's) is reported after those, not after a chunk of them.
	const first, chunk = 8, 512
	var out []data.Sequence
	var dropped, unrendered, noGen leftOut
	var firstUnrendered error
	full := func() bool { return limit > 0 && len(out) >= limit }
	for lo, size := 0, first; lo < len(exs) && !full(); lo, size = lo+size, chunk {
		if lo != first { // (a poll a chunk of 512: none more for the few)
			if err := stop("encoding the " + what + " split"); err != nil {
				return nil, nil, err
			}
		}
		part := exs[lo:min(lo+size, len(exs))]
		encs, errs := make([]data.Sequence, len(part)), make([]error, len(part))
		genLen := make([]int, len(part)) // the tokens of its evaluation (scored)
		parallel.For(len(part), workers, func(i int) {
			if !rule.tooLong(part[i], -1) {
				encs[i], errs[i] = encodeSequence(enc, part[i])
				// (accuracy's candidates always: each label must render)
				if errs[i] == nil && scored != nil && (rule.max > 0 || scored.objective == ObjectiveAccuracy) {
					genLen[i], errs[i] = evalLength(part[i], enc, scored.maxNew, false)
				}
			}
		})
		for i, ex := range part {
			if full() {
				break
			}
			if errs[i] != nil && !strict && errors.Is(errs[i], data.ErrAnswer) {
				unrendered.add(ex.ID)
				if firstUnrendered == nil {
					firstUnrendered = errs[i]
				}
				continue
			}
			if errs[i] != nil {
				return nil, nil, fmt.Errorf("%s split: %w", what, errs[i])
			}
			if rule.tooLong(ex, -1) || rule.tooLong(ex, len(encs[i].IDs)) {
				dropped.add(ex.ID)
				continue
			}
			if rule.tooLong(ex, genLen[i]) {
				noGen.add(ex.ID)
				continue
			}
			out = append(out, encs[i])
			if scored != nil || keep {
				kept = append(kept, ex)
			}
		}
	}
	fmt.Fprintf(log, "%s split: %d examples encoded (dropped as longer than %s %d tokens: %v)\n", what, len(out), rule.name, rule.max, dropped)
	if noGen.n > 0 {
		fmt.Fprintf(log, "%s split: dropped %v as their %s would exceed %s %d tokens\n",
			what, noGen, scored.evaluation(), rule.name, rule.max)
	}
	if unrendered.n > 0 {
		if len(out) == 0 {
			return nil, nil, fmt.Errorf("%s split: every example left out: %w", what, firstUnrendered)
		}
		fmt.Fprintf(log, "warning: %s split: left out %v, whose answers the chat template cannot render after the model's prompt (task.strict stops at the first); the first: %v\n", what, unrendered, firstUnrendered)
	}
	return out, kept, nil
}

// scorable are the examples of split ("test", "validation") the test
// evaluation's rules let be scored: fitTest's, with the run's generation
// cap, then fitRouge's.
func scorable(cfg *Config, split string, exs []data.Example, enc *data.Encoder, rule lengthRule, log io.Writer, stop func(while string) error) ([]data.Example, error) {
	exs, err := rule.fitTest(split, exs, enc, cfg.maxNewTokens(), log, stop)
	if err != nil {
		return nil, err
	}
	return fitRouge(split, data.Task(cfg.Task.Name), exs, log)
}

// errNoneScorable is what scorable's error wraps when the test
// evaluation's rules leave none of a split's examples to score.
var errNoneScorable = errors.New("no example left to score")

// noneScorable is scorable's error for the validation split of
// eval.validation_metrics, saying, where the rules left no example, that
// it is the metric's doing: the same examples were just encoded for the
// validation loss, which scores them with their own answers.
func noneScorable(err error) error {
	if !errors.Is(err, errNoneScorable) {
		return err
	}
	return fmt.Errorf("eval.validation_metrics: %w; the validation loss scores these examples with their own answers, but the metric scores only those the test evaluation could: turn eval.validation_metrics off (or, where the length rule left them out, raise task.max_length or lower eval.max_new_tokens)", err)
}

// fitRouge leaves out the test examples of a task scored by ROUGE (XSum,
// generation) with a reference past eval.MaxRougeTokens tokens, which
// ROUGE refuses to score (its time grows with the product of the lengths):
// found at the test evaluation, after the training, one such reference
// failed the whole evaluation. It says which it left out.
func fitRouge(split string, task data.Task, exs []data.Example, log io.Writer) ([]data.Example, error) {
	if task != data.XSum && task != data.Generation {
		return exs, nil
	}
	var out []data.Example
	var skipped leftOut
	for _, ex := range exs {
		long := slices.ContainsFunc(references(task, ex), func(r string) bool {
			return len(r) > eval.MaxRougeTokens && len(eval.RougeTokenize(r, false)) > eval.MaxRougeTokens
		})
		if long {
			skipped.add(ex.ID)
			continue
		}
		out = append(out, ex)
	}
	if skipped.n > 0 {
		fmt.Fprintf(log, "warning: %s split: %v skipped, a reference longer than ROUGE's cap of %d tokens (eval.MaxRougeTokens); the metric is over the other %d\n",
			split, skipped, eval.MaxRougeTokens, len(out))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s split: %w: every example has a reference longer than ROUGE's cap of %d tokens", split, errNoneScorable, eval.MaxRougeTokens)
	}
	return out, nil
}

// encodeSequence encodes ex as a run keeps it (its text dropped, its ids in
// 32 bits).
func encodeSequence(enc *data.Encoder, ex data.Example) (data.Sequence, error) {
	e, err := enc.Encode(ex)
	if err != nil {
		return data.Sequence{}, err
	}
	s, err := e.Sequence()
	if err != nil {
		return data.Sequence{}, fmt.Errorf("example %s: %w", ex.ID, err)
	}
	return s, nil
}

// fitTest keeps the test examples whose evaluation fits the length rule with
// maxNew tokens generated (SQuAD, XSum, generation), and says how many it skipped.
func (r lengthRule) fitTest(split string, exs []data.Example, enc *data.Encoder, maxNew int, log io.Writer, stop func(while string) error) ([]data.Example, error) {
	if r.max <= 0 {
		return exs, nil
	}
	var out []data.Example
	var skipped leftOut
	for i, ex := range exs {
		if i%256 == 255 && stop != nil { // a large test split takes seconds
			if err := stop("measuring the " + split + " split"); err != nil {
				return nil, err
			}
		}
		n, err := evalLength(ex, enc, maxNew, r.tooLong(ex, -1))
		if err != nil {
			return nil, fmt.Errorf("%s split: %w", split, err)
		}
		if n < 0 || r.tooLong(ex, n) {
			skipped.add(ex.ID)
			continue
		}
		out = append(out, ex)
	}
	if skipped.n > 0 {
		fmt.Fprintf(log, "%s split: %d examples skipped as their evaluation would exceed %s %d tokens (%v); the metric is over the other %d\n",
			split, skipped.n, r.name, r.max, skipped, len(out))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s split: %w: every example's evaluation would exceed %s %d tokens", split, errNoneScorable, r.name, r.max)
	}
	return out, nil
}

// evalLength is the tokens an evaluation of ex takes: SST-2 and
// classification its longest rendered answer, SQuAD, XSum and generation
// the generation prompt plus maxNew; -1 when skip says it is too long to
// render at all.
func evalLength(ex data.Example, enc *data.Encoder, maxNew int, skip bool) (int, error) {
	if skip {
		return -1, nil
	}
	if !ex.Task.Generates() {
		cs, err := enc.Candidates(ex)
		if err != nil {
			return 0, err
		}
		n := 0
		for _, f := range cs.Full {
			n = max(n, len(f.IDs))
		}
		return n, nil
	}
	_, ids, err := enc.EncodePrompt(ex)
	return len(ids) + maxNew, err
}

// maxRowWarnings is how many malformed rows of one file are named one by
// one; the file's summary line then counts them all.
const maxRowWarnings = 20

// rowWarner is a data.ReadOptions.OnSkip for one file: it names its first
// maxRowWarnings malformed rows on log, then says once that the rest are
// counted only, so that a file of thousands of rows that do not fit (the
// wrong labels, say) is not thousands of warnings.
func rowWarner(log io.Writer) func(*data.RowError) {
	n := 0
	return func(e *data.RowError) {
		switch n++; {
		case n <= maxRowWarnings:
			fmt.Fprintf(log, "warning: skipped malformed row: %v\n", e)
		case n == maxRowWarnings+1:
			fmt.Fprintf(log, "warning: more malformed rows in %s: counted below, not shown\n", e.File)
		}
	}
}
