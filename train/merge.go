package train

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/meazo-go/meazo/internal/atomicfile"
	"github.com/meazo-go/meazo/internal/outpath"
	"github.com/meazo-go/meazo/lora"
	"github.com/meazo-go/meazo/model"
	"github.com/meazo-go/meazo/tensor"
)

// MergeOptions say what MergeLoRA merges and where it writes it. Its
// errors name them by meazo-inspect merge's flags.
type MergeOptions struct {
	Model   string         // --model: the base model's HF directory
	Adapter string         // --adapter: a saved LoRA adapter (PEFT format, a LoRA run's best/ or last/)
	Out     string         // --out: the merged model's directory, new or empty
	Backend tensor.Backend // where the weights are held and merged; nil: the CPU
	Log     io.Writer      // a line as each phase starts (loading, merging, writing), with its time so far; nil: none
	// Float32 (--dtype float32) holds and writes every weight of the
	// language model in float32, so that the merge is kept whole: a
	// bfloat16 or float16 checkpoint's merged weights are otherwise
	// rounded to its dtype, which can take most of a small adapter's
	// change (lora.Rounding). The vision tower and projector of a
	// multimodal checkpoint are still copied as they are.
	Float32 bool
	// OnTemp, when set, is told the temporary directory beside Out that
	// the merge writes into, before it writes there, and "" once that is
	// renamed to Out or removed: a signal handler removes it, so that a
	// merge stopped by Ctrl-C leaves no hidden half-written model.
	OnTemp func(dir string)
}

// phase writes a progress line to opts.Log: a large model takes minutes to
// load and to write, and a command that says nothing meanwhile looks hung.
func (opts MergeOptions) phase(start time.Time, format string, args ...any) {
	if opts.Log != nil {
		fmt.Fprintf(opts.Log, "[%s] %s\n", time.Since(start).Round(100*time.Millisecond), fmt.Sprintf(format, args...))
	}
}

// MergeLoRA writes the model with the LoRA adapter merged into its weights
// (lora.Adapter.MergeInto: PEFT's merge_and_unload; a ViT's: mergeViT) into opts.Out, as an
// HF model directory that loads as a plain model: config.json, the
// weights as model.Save writes them (in the dtype the checkpoint stores:
// bfloat16, float16 or float32), and the base
// model's tokenizer and generation files. The directory appears whole or
// not at all: it is written beside opts.Out and renamed there. It returns
// what it did, in a line or two.
func MergeLoRA(opts MergeOptions) (string, error) {
	if err := opts.Check(); err != nil {
		return "", err
	}
	opts.Out = filepath.Clean(opts.Out)
	start := time.Now()
	if model.IsViT(opts.Model) {
		return mergeViT(opts, start)
	}
	opts.phase(start, "loading %s", opts.Model)
	m, err := model.LoadWith(opts.Model, model.LoadOptions{Backend: opts.Backend, Unstacked: true, BF16Weights: !opts.Float32})
	if err != nil {
		return "", err
	}
	defer m.Free()
	if opts.Float32 {
		m.ForgetF16() // a float16 checkpoint's merged weights are not rounded to float16 either
	}
	a, err := openAdapter(opts.Adapter, m, false)
	if err != nil {
		return "", err
	}
	l, ok := a.(*loraAdapter)
	if !ok { // Check refused every other kind, unless the directory changed since
		return "", fmt.Errorf("--adapter %s is not a LoRA adapter (any more)", opts.Adapter)
	}
	la := l.a
	opts.phase(start, "merging %s into %s of %s", opts.Adapter, strings.Join(la.Targets(), ", "), layerList(la.Layers()))
	rd, err := la.MergeIntoRounded(m)
	if err != nil {
		return "", err
	}
	opts.phase(start, "writing %s", opts.Out)
	if err := saveWhole(m, opts); err != nil {
		return "", err
	}
	opts.phase(start, "done")
	return mergeReport(opts, la, m, rd)
}

// Check refuses what MergeLoRA cannot do, before anything is loaded (a
// command calls it before it opens a backend; MergeLoRA calls it too): a
// run directory as the model, an image classifier, an adapter that is not
// a LoRA one (prompt tuning has no weights to merge; a full-parameter
// run's best/ is a whole model already), and an output that is not new or
// empty or lies where it could replace what is read.
func (opts MergeOptions) Check() error {
	switch {
	case opts.Model == "" || opts.Adapter == "" || opts.Out == "":
		return errors.New("--model, --adapter and --out are required")
	case NotAModelDir(opts.Model) != "":
		return fmt.Errorf("--model %s: %s", opts.Model, NotAModelDir(opts.Model))
	}
	if err := mergeableAdapter(opts.Adapter); err != nil {
		return err
	}
	if err := outpath.Check("--out", opts.Out, opts.Model, opts.Adapter); err != nil {
		return err
	}
	return checkEmptyOut(opts.Out)
}

// mergeableAdapter refuses an adapter directory that does not hold a LoRA
// adapter, saying what it is.
func mergeableAdapter(dir string) error {
	_, noConfig := os.Stat(filepath.Join(dir, "adapter_config.json"))
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err == nil && noConfig != nil {
		return fmt.Errorf("--adapter %s is a model directory (config.json, no adapter_config.json), as a full-parameter run's best/ and last/ are: "+
			"it is a whole model already, with nothing to merge; use it as the model as it is (--model %s)", dir, dir)
	}
	kind, err := peftType(dir)
	switch {
	case err != nil:
		return err
	case kind == "PROMPT_TUNING":
		return fmt.Errorf("--adapter %s is a prompt-tuning adapter: its virtual tokens are put before the input, not added to a weight, "+
			"so there is nothing to merge; use it as it is (--adapter, with meazo-eval or meazo-inspect generate)", dir)
	case kind != "LORA":
		return fmt.Errorf("--adapter %s: adapter_config.json has peft_type %s; only a LoRA adapter (LORA) is merged", dir, clipValue(kind))
	}
	return nil
}

// checkEmptyOut refuses an output directory that holds anything (or is
// not a directory): the merged model is written whole, never beside or
// over other files. An empty one is refused too where it is the working
// directory ("--out ."): saveWhole replaces it, which that cannot be (and
// should not: the shell would be left in a removed directory).
func checkEmptyOut(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--out %s is a file; name a new or empty directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if len(ents) > 0 {
		names := make([]string, 0, 4)
		for _, e := range ents[:min(len(ents), 3)] {
			names = append(names, e.Name())
		}
		if len(ents) > 3 {
			names = append(names, fmt.Sprintf("and %d more", len(ents)-3))
		}
		return fmt.Errorf("--out %s is not empty (it holds %s): the merged model is written into a new or empty directory only; choose another --out",
			dir, strings.Join(names, ", "))
	}
	if wd, err := os.Stat("."); err == nil && os.SameFile(st, wd) {
		return fmt.Errorf("--out %s is the current directory: the merged model is written beside --out and moved there whole, "+
			"which the current directory cannot be; name a new directory (e.g. --out merged)", dir)
	}
	return nil
}

// saveWhole saves m into a new directory beside opts.Out and renames it to
// opts.Out (writeWhole).
func saveWhole(m *model.Model, opts MergeOptions) error {
	return writeWhole(opts, func(dir string) error {
		return m.Save(dir, model.SaveOptions{Source: opts.Model, Float16: !opts.Float32})
	})
}

// writeWhole runs write on a new directory beside opts.Out and renames it
// to opts.Out (an empty one there is replaced), so that a failure leaves
// no half-written model that looks whole.
func writeWhole(opts MergeOptions, write func(dir string) error) (err error) {
	parent := filepath.Dir(opts.Out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	noteLeftovers(opts, parent)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(opts.Out)+".tmp-")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if opts.OnTemp != nil {
		opts.OnTemp(tmp)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
		if opts.OnTemp != nil {
			opts.OnTemp("")
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := write(tmp); err != nil {
		return err
	}
	if err := os.Remove(opts.Out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out: %w", err) // not empty any more: someone wrote there meanwhile
	}
	if err := os.Rename(tmp, opts.Out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := atomicfile.SyncDir(parent); err != nil { // the rename, on the disk
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// noteLeftovers names, in opts.Log, the temporary directories beside
// opts.Out that earlier merges killed before their end (SIGKILL, out of
// memory) left, each the size of a model. They are not removed: one may
// be a merge running now into the same --out.
func noteLeftovers(opts MergeOptions, parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil || opts.Log == nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && atomicfile.IsLeftover(e.Name(), filepath.Base(opts.Out)) {
			fmt.Fprintf(opts.Log, "note: %s is what a merge into %s that did not end left (a whole model's files, unless a merge into it runs now): remove it to free its space\n",
				filepath.Join(parent, e.Name()), opts.Out)
		}
	}
}

// mergeReport says what MergeLoRA wrote from m: the adapter, and the
// dtypes of the weights as model.Save wrote them (bfloat16, float16 where
// the checkpoint stores it, float32), and, where the merged weights were
// rounded to bfloat16 or float16, how much of the adapter's change that
// rounding took (rd).
func mergeReport(opts MergeOptions, a *lora.Adapter, m *model.Model, rd lora.Rounding) (string, error) {
	ts, err := m.Tensors()
	if err != nil {
		return "", err
	}
	dtypes := map[string]bool{}
	for _, t := range ts {
		switch {
		case t.BF16:
			dtypes["bfloat16"] = true
		case t.F16:
			dtypes["float16"] = true
		default:
			dtypes["float32"] = true
		}
	}
	written := slices.Sorted(maps.Keys(dtypes))
	where := strings.Join(a.Targets(), ", ")
	if ls := a.Layers(); len(ls) < m.NumLayers { // (layers_to_transform)
		where += " of " + layerList(ls)
	}
	s := fmt.Sprintf("wrote %s: %s with the LoRA adapter %s merged into its %s (r %d, scale %g); weights %s",
		opts.Out, opts.Model, opts.Adapter, where, a.Rank(), a.Scale(), strings.Join(written, ", "))
	if rd.Dtype != "" {
		s += "\n" + roundingNote(rd)
	}
	return s, nil
}

// roundingNote says how much of the adapter's change rounding the merged
// weights to their checkpoint's dtype took, and how to keep it: a ZO
// run's adapter changes a weight by less than bfloat16's spacing there
// more often than not, and the merged model's outputs are then not the
// adapter's. PEFT's merge_and_unload on the model in that dtype rounds
// the same way (lora.MergeInto).
func roundingNote(rd lora.Rounding) string {
	rel := rd.Relative()
	s := fmt.Sprintf("rounding the merged weights to %s changed them by %.3g%% of the adapter's change (‖round(W+ΔW) − (W+ΔW)‖ / ‖ΔW‖)", rd.Dtype, 100*rel)
	if rel < 0.01 {
		return s
	}
	return s + ": the merged model's outputs are not the adapter's; --dtype float32 writes the merged weights in float32, keeping the merge whole (twice the memory and disk of " + rd.Dtype + ")"
}
