package train

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tokenizer"
)

// validationLoss is the token-weighted mean cross-entropy over every
// supervised token of the validation set, with whatever adapter m has
// attached, accumulated in float64.
func validationLoss(m *model.Model, exs []data.Encoded, batchSize, padID int) (float64, error) {
	var sum float64
	var tokens int
	for lo := 0; lo < len(exs); lo += batchSize {
		b := data.TrainBatch(exs[lo:min(lo+batchSize, len(exs))], padID)
		out, err := m.Forward(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, model.Options{Labels: b.Labels})
		if err != nil {
			return 0, err
		}
		if out.Tokens == 0 {
			continue // no supervised token: its NaN mean would poison the sum
		}
		sum += out.Loss * float64(out.Tokens)
		tokens += out.Tokens
	}
	if tokens == 0 {
		return 0, fmt.Errorf("the validation set has no supervised token")
	}
	return sum / float64(tokens), nil
}

// evaluator computes a task's test metric with the model as it is
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
}

// testMetrics returns the task's metrics on exs: SST-2 {"accuracy"},
// SQuAD {"exact_match","f1"} (0-100), XSum {"rouge1","rouge2","rougeL","rougeLsum"}
// (mean sentence-level F-measures, 0-100, without stemming unless asked:
// HF evaluate's default, docs/ALGORITHMS.md's metric rules).
func (e *evaluator) testMetrics(m *model.Model, exs []data.Example, what string) (map[string]float64, error) {
	start := time.Now()
	var res map[string]float64
	var err error
	if e.task == data.SST2 {
		res, err = e.sst2(m, exs)
	} else {
		res, err = e.generative(m, exs)
	}
	if err == nil {
		fmt.Fprintf(e.log, "test (%s, %d examples, %.0fs): %s\n", what, len(exs), time.Since(start).Seconds(), FormatMetrics(res))
	}
	return res, err
}

// sst2 scores both label candidates of every example by the mean
// log-probability of their label tokens (docs/ALGORITHMS.md's data protocol) and reports accuracy.
func (e *evaluator) sst2(m *model.Model, exs []data.Example) (map[string]float64, error) {
	var seqs []data.Encoded
	for _, ex := range exs {
		lc, err := e.enc.SST2Candidates(ex)
		if err != nil {
			return nil, err
		}
		for c := range 2 {
			s := lc.Full[c]
			labels := make([]int, len(s.IDs))
			for i := range labels {
				labels[i] = data.IgnoreIndex
				if i >= lc.Span[c][0] && i < lc.Span[c][1] {
					labels[i] = s.IDs[i]
				}
			}
			seqs = append(seqs, data.Encoded{IDs: s.IDs, Labels: labels})
		}
	}
	scores := make([]float64, len(seqs))
	for lo := 0; lo < len(seqs); lo += e.batchSize {
		b := data.TrainBatch(seqs[lo:min(lo+e.batchSize, len(seqs))], e.padID)
		out, err := m.Forward(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask}, model.Options{Labels: b.Labels})
		if err != nil {
			return nil, err
		}
		for i, l := range out.LossPerSeq {
			scores[lo+i] = -l // mean log-probability of the label tokens
		}
	}
	var pred, gold []int
	for i, ex := range exs {
		pred = append(pred, eval.PredictLabel(scores[2*i:2*i+2]))
		gold = append(gold, ex.Label)
	}
	return map[string]float64{"accuracy": eval.Accuracy(pred, gold)}, nil
}

// generative decodes greedily from each example's generation prompt and
// scores the extracted answer (SQuAD EM/F1, XSum ROUGE).
func (e *evaluator) generative(m *model.Model, exs []data.Example) (map[string]float64, error) {
	var squad eval.SquadTotals
	var r1, r2, rl, rlsum float64
	prefix := eval.AnswerPrefix
	if e.task == data.XSum {
		prefix = eval.SummaryPrefix
	}
	for lo := 0; lo < len(exs); lo += e.batchSize {
		chunk := exs[lo:min(lo+e.batchSize, len(exs))]
		prompts := make([][]int, len(chunk))
		for i, ex := range chunk {
			_, ids, err := e.enc.EncodePrompt(ex)
			if err != nil {
				return nil, err
			}
			prompts[i] = ids
		}
		b := data.GenerateBatch(prompts, e.padID)
		outs, err := m.Generate(model.Input{B: b.Size, T: b.Len, Tokens: b.IDs, Mask: b.Mask},
			model.GenerateOptions{MaxNewTokens: e.maxNewTokens, StopIDs: e.stopIDs})
		if err != nil {
			return nil, err
		}
		for i, ex := range chunk {
			gen := outs[i]
			if n := len(gen); n > 0 && slices.Contains(e.stopIDs, gen[n-1]) {
				gen = gen[:n-1]
			}
			pred := eval.ExtractAnswer(e.tok.DecodeHF(gen, true), prefix)
			if e.task == data.SQuAD {
				em, f1 := eval.SquadScore(pred, ex.Answers)
				squad.Add(em, f1)
			} else {
				s, err := eval.Rouge(ex.Summary, pred, e.rougeStem)
				if err != nil {
					return nil, fmt.Errorf("XSum example %q: %w", ex.ID, err)
				}
				r1 += s.Rouge1.FMeasure
				r2 += s.Rouge2.FMeasure
				rl += s.RougeL.FMeasure
				rlsum += s.RougeLsum.FMeasure
			}
		}
	}
	if e.task == data.SQuAD {
		em, f1 := squad.Result()
		return map[string]float64{"exact_match": em, "f1": f1}, nil
	}
	n := float64(len(exs))
	return map[string]float64{"rouge1": 100 * r1 / n, "rouge2": 100 * r2 / n, "rougeL": 100 * rl / n, "rougeLsum": 100 * rlsum / n}, nil
}

// EvalOptions configures Evaluate.
type EvalOptions struct {
	// Adapter is a saved adapter directory (PEFT LoRA or prompt tuning, as a
	// run's best/) to evaluate m with; empty: m as it is.
	Adapter      string
	Merge        bool   // LoRA: evaluate on a copy of m with the adapter merged into its weights (faster generation)
	Task         string // sst2, squad or xsum
	Data         string // the test file (any format the data package reads)
	MaxExamples  int    // first N examples (0: all)
	BatchSize    int    // default 8
	MaxNewTokens int    // default: SQuAD 50, XSum 100
	DateString   string // Llama-3.x date_string (default 26 Jul 2024)
	RougeStem    bool   // XSum: Porter-stem tokens (off by default, as HF evaluate)
	Strict       bool   // stop at the first malformed row (task.strict) instead of skipping it
	Log          io.Writer
}

// Evaluate computes a task's test metrics for m, with the saved adapter
// o.Adapter if one is named (m as it is otherwise), as meazo-train does at
// the end of a run.
func Evaluate(m *model.Model, tok *tokenizer.Tokenizer, o EvalOptions) (map[string]float64, error) {
	task, err := data.ParseTask(o.Task)
	if err != nil {
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
	exs, st, err := data.ReadAll(o.Data, task, data.ReadOptions{Limit: o.MaxExamples, Strict: o.Strict, OnSkip: func(e *data.RowError) {
		fmt.Fprintf(o.Log, "warning: skipped malformed row: %v\n", e)
	}})
	if err != nil {
		return nil, err
	}
	if len(exs) == 0 {
		return nil, fmt.Errorf("%s: no examples", o.Data)
	}
	fmt.Fprintf(o.Log, "evaluating on %d examples of %s (%d malformed rows skipped)\n", st.Examples, o.Data, st.Skipped)
	e := &evaluator{task: task, tok: tok, enc: &data.Encoder{Tok: tok, DateString: o.DateString}, batchSize: o.BatchSize,
		maxNewTokens: o.MaxNewTokens, stopIDs: stopIDs(tok, m), padID: tok.PadID(), rougeStem: o.RougeStem, log: o.Log}
	var res map[string]float64
	err = withAdapter(m, adapter, params, o.Merge, func(m *model.Model) (err error) {
		res, err = e.testMetrics(m, exs, "evaluation")
		return err
	})
	return res, err
}

// defaultMaxNewTokens is the generation cap of docs/ALGORITHMS.md's data protocol: SQuAD 50, XSum 100.
func defaultMaxNewTokens(task data.Task) int {
	return map[data.Task]int{data.SQuAD: 50, data.XSum: 100, data.SST2: 1}[task]
}

// stopIDs are the tokenizer's end-of-turn ids plus the model config's eos ids.
func stopIDs(tok *tokenizer.Tokenizer, m *model.Model) []int {
	stops := slices.Clone(tok.StopIDs())
	for _, id := range m.EOSTokenIDs {
		if !slices.Contains(stops, id) {
			stops = append(stops, id)
		}
	}
	return stops
}
