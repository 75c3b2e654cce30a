package train

import (
	"fmt"
	"io"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/tokenizer"
)

// splits is the data of a run: encoded train and validation examples, and the
// raw test examples (evaluated by generation or label scoring).
type splits struct {
	train, val []data.Encoded
	test       []data.Example
}

// checkChatTemplate refuses a tokenizer without a chat template before any
// data is read: every task's examples are rendered with it, so without one
// the first example would fail, named as if it were at fault.
func checkChatTemplate(tok *tokenizer.Tokenizer, model string) error {
	if !tok.HasChatTemplate() {
		return fmt.Errorf("model %s: %w", model, tokenizer.ErrNoChatTemplate)
	}
	return nil
}

// loadSplits reads the task's files and draws the paper's splits
// (docs/ALGORITHMS.md, the data protocol): SST-2 and SQuAD hold out 5% of train (a permutation
// seeded by task.data_seed) as validation; examples longer than
// task.max_length tokens after chat rendering are dropped, then the first
// max_train / max_validation are kept. stop is polled while the examples are
// encoded (minutes for a large dataset): a non-nil error ends the load.
func loadSplits(cfg *Config, enc *data.Encoder, log io.Writer, stop func(while string) error) (*splits, error) {
	task := data.Task(cfg.Task.Name)
	spec := data.PaperSplits[task]
	maxTrain, maxVal := spec.MaxTrain, spec.MaxValidation
	if cfg.Task.MaxTrain > 0 {
		maxTrain = cfg.Task.MaxTrain
	}
	if cfg.Task.MaxValidation > 0 {
		maxVal = cfg.Task.MaxValidation
	}
	opt := data.ReadOptions{Strict: cfg.Task.Strict, OnSkip: func(e *data.RowError) {
		fmt.Fprintf(log, "warning: skipped malformed row: %v\n", e)
	}}

	all, st, err := data.ReadAll(cfg.Task.Train, task, opt)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "read %d training examples from %s (%d malformed rows skipped)\n", st.Examples, cfg.Task.Train, st.Skipped)
	trainEx, valEx := all, []data.Example(nil)
	if cfg.Task.Validation != "" {
		if valEx, st, err = data.ReadAll(cfg.Task.Validation, task, opt); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "read %d validation examples from %s (%d skipped)\n", st.Examples, cfg.Task.Validation, st.Skipped)
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
	s := &splits{}
	if s.train, err = encodeFirst(trainEx, enc, cfg.Task.MaxLength, maxTrain, "train", log, stop); err != nil {
		return nil, err
	}
	if s.val, err = encodeFirst(valEx, enc, cfg.Task.MaxLength, maxVal, "validation", log, stop); err != nil {
		return nil, err
	}
	if len(s.train) == 0 || len(s.val) == 0 {
		return nil, fmt.Errorf("empty split after filtering: %d train, %d validation examples within task.max_length %d tokens (task.train %s, task.validation %q)",
			len(s.train), len(s.val), cfg.Task.MaxLength, cfg.Task.Train, cfg.Task.Validation)
	}
	if cfg.Task.Test != "" && !cfg.Eval.Skip {
		if s.test, st, err = data.ReadAll(cfg.Task.Test, task, data.ReadOptions{Strict: opt.Strict, OnSkip: opt.OnSkip, Limit: cfg.Task.MaxTest}); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "read %d test examples from %s (%d skipped)\n", st.Examples, cfg.Task.Test, st.Skipped)
	}
	return s, nil
}

// encodeFirst encodes examples in order, dropping those longer than maxLen
// tokens, until limit are kept (0: all).
func encodeFirst(exs []data.Example, enc *data.Encoder, maxLen, limit int, what string, log io.Writer, stop func(while string) error) ([]data.Encoded, error) {
	var out []data.Encoded
	dropped := 0
	for i, ex := range exs {
		if limit > 0 && len(out) >= limit {
			break
		}
		if i%256 == 0 {
			if err := stop("encoding the " + what + " split"); err != nil {
				return nil, err
			}
		}
		e, err := enc.Encode(ex)
		if err != nil {
			return nil, fmt.Errorf("%s split: %w", what, err)
		}
		if maxLen > 0 && len(e.IDs) > maxLen {
			dropped++
			continue
		}
		out = append(out, e)
	}
	fmt.Fprintf(log, "%s split: %d examples encoded (%d dropped as longer than %d tokens)\n", what, len(out), dropped, maxLen)
	return out, nil
}
