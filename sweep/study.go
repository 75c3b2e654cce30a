package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/meazo-go/meazo/internal/inputfile"
	"github.com/meazo-go/meazo/internal/strictyaml"
	"github.com/meazo-go/meazo/train"
)

// DefaultCoarse is the paper's coarse grid (docs/SWEEPS.md).
var DefaultCoarse = []float64{1e-6, 5e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 1e-1}

// Study is a study file (docs/SWEEPS.md): experiments × optimizers, each a
// two-stage learning-rate search, and how to run them. Every field's doc tag
// is its documentation (StudyDoc).
type Study struct {
	Name        string       `yaml:"name" doc:"the study's name (Slurm job names): letters, digits, '-', '_' and '.'"`
	Out         string       `yaml:"out" doc:"the study directory: one sweep directory per experiment × optimizer (× variant), OUT/<experiment>_<optimizer>[_<variant>]/lr=<rate>_seed=<seed>"`
	Demo        string       `yaml:"demo" doc:"optional: a directory where meazo-sweep first writes the built-in demo's tiny model, tokenizer, data and demo.yaml (once; kept afterwards)"`
	Seeds       []uint64     `yaml:"seeds" doc:"seeds per rate (default [0, 1, 2])"`
	Coarse      []float64    `yaml:"coarse" doc:"the coarse grid (default: the paper's, 1e-6 … 1e-1)"`
	Fine        *bool        `yaml:"fine" doc:"run stage 2, the fine grid around the coarse η* (default true)"`
	Set         []string     `yaml:"set" doc:"meazo-train --set key=value for every run"`
	Experiments []Experiment `yaml:"experiments" doc:"the experiments (at least one)"`
	Executor    Executor     `yaml:"executor" doc:"where the runs go"`

	path string // the file it was read from, for messages
	src  []byte // its text, for the lines messages name (where)
}

// Experiment is one meazo-train config searched with each optimizer.
type Experiment struct {
	Name       string    `yaml:"name" doc:"names its sweep directories (letters, digits, '-', '_', '.')"`
	Config     string    `yaml:"config" doc:"the meazo-train config; {optimizer} in it is replaced by each sweep's optimizer (configs/ has one file per optimizer, with its q and noise). Relative paths are to the directory meazo-sweep runs in, as for meazo-train"`
	Optimizers []string  `yaml:"optimizers" doc:"one sweep per optimizer (default: the config's optimizer.name)"`
	Set        []string  `yaml:"set" doc:"meazo-train --set key=value for this experiment's runs (after the study's)"`
	Seeds      []uint64  `yaml:"seeds" doc:"this experiment's seeds (default: the study's)"`
	Coarse     []float64 `yaml:"coarse" doc:"this experiment's coarse grid (default: the study's)"`
	Fine       *bool     `yaml:"fine" doc:"this experiment's stage 2 (default: the study's)"`
	Variants   []Variant `yaml:"variants" doc:"optional: one sweep per optimizer and variant, OUT/<experiment>_<optimizer>_<variant>; the tables and figures compare the variants side by side, each labelled"`
}

// Variant is one setting an experiment is run in besides the optimizer (the
// paper's ZO-Adam with β1 = 0 and 0.9, MEAZO with four noise distributions):
// its own --set lines, its own sweep, its own line in the figures.
type Variant struct {
	Name  string   `yaml:"name" doc:"names the variant's sweep directories (letters, digits, '-', '_', '.', '=')"`
	Label string   `yaml:"label" doc:"how tables and figures name it (default: the name), e.g. 'β1 = 0': one line, no vertical bar (it heads a column of results.md)"`
	Set   []string `yaml:"set" doc:"meazo-train --set key=value for the variant's runs (after the experiment's)"`
}

// Title is how tables and figures name the variant.
func (v *Variant) Title() string {
	if v.Label != "" {
		return v.Label
	}
	return v.Name
}

// Executor says where runs go.
type Executor struct {
	Kind     string `yaml:"kind" doc:"local (default) or slurm"`
	Trainer  string `yaml:"trainer" doc:"the meazo-train binary (default: $MEAZO_TRAIN, else next to meazo-sweep, else on PATH)"`
	Parallel int    `yaml:"parallel" doc:"local: runs at a time (default: one per GPU when gpus is set, else one per 2 cores)"`
	GPUs     []int  `yaml:"gpus" doc:"local: GPU indices; each run gets one as CUDA_VISIBLE_DEVICES"`
	Slurm    Slurm  `yaml:"slurm" doc:"the slurm executor's settings"`
}

// Slurm is the slurm executor's settings.
type Slurm struct {
	Partition    string   `yaml:"partition" doc:"--partition"`
	Account      string   `yaml:"account" doc:"--account"`
	QOS          string   `yaml:"qos" doc:"--qos"`
	Time         string   `yaml:"time" doc:"--time of each run's job (Slurm format, e.g. 4:00:00; default 1:00:00); a run stopped by it is requeued and resumes"`
	Mem          string   `yaml:"mem" doc:"--mem, e.g. 16G"`
	CPUsPerTask  int      `yaml:"cpus_per_task" doc:"--cpus-per-task (default 2)"`
	Gres         string   `yaml:"gres" doc:"--gres, e.g. gpu:1"`
	Throttle     int      `yaml:"throttle" doc:"at most this many runs of a stage at once (--array=…%N; default 8)"`
	MaxArraySize int      `yaml:"max_array_size" doc:"split arrays above this many tasks (default: MaxArraySize from scontrol show config)"`
	SignalSecs   int      `yaml:"signal_seconds" doc:"SIGUSR1 this many seconds before the time limit (--signal=B:USR1@N; default 300): the run checkpoints and the job is requeued"`
	Sbatch       []string `yaml:"sbatch" doc:"extra #SBATCH lines, e.g. '--constraint=a100' (with or without the #SBATCH prefix)"`
	Setup        []string `yaml:"setup" doc:"shell lines run before meazo-train in every job (module load …, cd …)"`
	SelectTime   string   `yaml:"select_time" doc:"--time of the selection jobs between stages (default 0:10:00)"`
}

// LoadStudy reads a study file strictly: unknown keys are errors naming the
// closest known key.
func LoadStudy(path string) (*Study, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	raw, err := strictyaml.Parse(b) // one document, no key without a value
	if err != nil {
		return nil, fmt.Errorf("study %w", strictyaml.At(path, err))
	}
	if raw == nil {
		return nil, fmt.Errorf("study %s: empty file", path)
	}
	if m, ok := raw.(map[string]any); ok && m["experiments"] == nil && (m["model"] != nil || m["task"] != nil || m["optimizer"] != nil) {
		return nil, fmt.Errorf("study %s: a meazo-train config (model:, task:, optimizer:), not a study file: train it with meazo-train --config %s, or name it in a study's experiments (config: %s; meazo-sweep doc lists a study's keys)", path, path, path)
	}
	if err := checkStrict(raw, reflect.TypeOf(Study{}), ""); err != nil {
		var ke *unknownKeyError
		var ve *valueError
		key := ""
		switch {
		case errors.As(err, &ke):
			key = ke.key
		case errors.As(err, &ve):
			key = ve.key
		}
		if line := strictyaml.Line(b, strings.Split(key, ".")...); key != "" && line > 0 {
			return nil, fmt.Errorf("study %s:%d: %w", path, line, err)
		}
		return nil, fmt.Errorf("study %s: %w", path, err)
	}
	var st Study
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("study %s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	st.path, st.src = path, b
	if err := st.validate(); err != nil {
		// validate's messages start with the key they are about
		// (experiments.2.name: …): name its line, as the checks above do.
		key, _, _ := strings.Cut(err.Error(), ":")
		return nil, fmt.Errorf("%s: %w", st.where(strings.Fields(key + " ")[0]), err)
	}
	return &st, nil
}

// where names the study file and the line of key (a dotted path of the
// study's keys and list indices, "experiments.2.name"), or of the nearest
// key above it that the file writes: "study FILE:LINE", or "study FILE"
// when the file writes none of them (a default, or a study not read from
// a file).
func (st *Study) where(key string) string {
	for k := strings.Split(key, "."); len(k) > 0 && k[0] != ""; k = k[:len(k)-1] {
		if line := strictyaml.Line(st.src, k...); line > 0 {
			return fmt.Sprintf("study %s:%d", st.path, line)
		}
	}
	return "study " + st.path
}

// validate checks the study and fills in its defaults, in the order the
// file reads: the study's own keys, each experiment, the sweeps' names,
// the executor. The first mistake is the error.
func (st *Study) validate() error {
	if err := st.checkTop(); err != nil {
		return err
	}
	if len(st.Experiments) == 0 {
		return fmt.Errorf("experiments: at least one is required")
	}
	names := map[string]bool{}
	for i := range st.Experiments {
		if err := st.checkExperiment(i, names); err != nil {
			return err
		}
	}
	if err := st.checkSweepNames(); err != nil {
		return err
	}
	if err := st.Executor.check(); err != nil {
		return err
	}
	return st.Executor.Slurm.check()
}

// checkTop checks the study's own keys (out, seeds, coarse, set) and fills
// in the defaults of name, seeds, coarse and fine.
func (st *Study) checkTop() error {
	if st.Out == "" {
		return fmt.Errorf("out: the study directory is required")
	}
	if st.Name == "" {
		st.Name = "study"
	}
	// The name goes into the Slurm scripts as it is (#SBATCH --job-name, a
	// comment line): a space would split the #SBATCH line and a line break
	// would end the comment and run the rest as a shell command.
	if !nameChars(st.Name, "-_.") {
		return fmt.Errorf("name: %q: want letters, digits, '-', '_' or '.' (it names the study's Slurm jobs)", st.Name)
	}
	if err := checkDirPlace("out", st.Out); err != nil {
		return err
	}
	if err := st.checkDemoPlace(); err != nil {
		return err
	}
	// An empty list given on purpose is a mistake, not a request for the
	// defaults (which would run the paper's 33 runs per sweep).
	if st.Seeds != nil && len(st.Seeds) == 0 {
		return fmt.Errorf("seeds: an empty list (leave the key out for the default [0, 1, 2])")
	}
	if st.Coarse != nil && len(st.Coarse) == 0 {
		return fmt.Errorf("coarse: an empty list (leave the key out for the paper's grid)")
	}
	if len(st.Seeds) == 0 {
		st.Seeds = []uint64{0, 1, 2}
	}
	if len(st.Coarse) == 0 {
		st.Coarse = append([]float64(nil), DefaultCoarse...)
	}
	if err := checkGrid("", st.Seeds, st.Coarse); err != nil {
		return err
	}
	if st.Fine == nil {
		t := true
		st.Fine = &t
	}
	for _, s := range st.Set {
		if err := checkSet("set", s); err != nil {
			return err
		}
	}
	return nil
}

// checkExperiment checks experiment i (names: the experiments' names so
// far) and fills in its optimizers and the study's seeds, grid and fine.
func (st *Study) checkExperiment(i int, names map[string]bool) error {
	e := &st.Experiments[i]
	where := fmt.Sprintf("experiments.%d", i)
	for _, l := range []struct {
		key   string
		empty bool
	}{{"seeds", e.Seeds != nil && len(e.Seeds) == 0}, {"coarse", e.Coarse != nil && len(e.Coarse) == 0}, {"optimizers", e.Optimizers != nil && len(e.Optimizers) == 0}} {
		if l.empty {
			return fmt.Errorf("%s.%s: an empty list (leave the key out for the default)", where, l.key)
		}
	}
	if !nameChars(e.Name, "-_.") {
		return fmt.Errorf("%s.name: %q: want letters, digits, '-', '_' or '.'", where, e.Name)
	}
	if names[e.Name] {
		return fmt.Errorf("%s.name: %q used twice", where, e.Name)
	}
	names[e.Name] = true
	if e.Config == "" {
		return fmt.Errorf("%s.config: required", where)
	}
	if err := e.checkOptimizers(where, st.Demo != ""); err != nil {
		return err
	}
	for _, s := range e.Set {
		if err := checkSet(where+".set", s); err != nil {
			return err
		}
	}
	if err := checkVariants(where, e.Variants); err != nil {
		return err
	}
	if len(e.Seeds) == 0 {
		e.Seeds = st.Seeds
	}
	if len(e.Coarse) == 0 {
		e.Coarse = st.Coarse
	}
	if e.Fine == nil {
		e.Fine = st.Fine
	}
	return checkGrid(where+".", e.Seeds, e.Coarse)
}

// checkOptimizers checks the experiment's optimizers, or takes the one its
// config names when it names none (meazo when a demo study's config is not
// written yet: demo).
func (e *Experiment) checkOptimizers(where string, demo bool) error {
	if len(e.Optimizers) == 0 && strings.Contains(e.Config, "{optimizer}") {
		return fmt.Errorf("%s.optimizers: required when config names {optimizer}", where)
	}
	if len(e.Optimizers) == 0 {
		o, err := configOptimizer(e.Config)
		if err != nil && !demo {
			return fmt.Errorf("%s.optimizers: not given and %v", where, err)
		}
		if o == "" {
			o = "meazo"
		}
		e.Optimizers = []string{o}
	}
	for i, o := range e.Optimizers {
		if err := train.OptimizerChoice(where+".optimizers:", o); err != nil {
			return err
		}
		if slices.Contains(e.Optimizers[:i], o) {
			return fmt.Errorf("%s.optimizers: %q given twice", where, o)
		}
	}
	return nil
}

// checkSweepNames refuses two sweeps in one directory, which would mix
// their runs: "a" with variant "b_meazo" and "a_meazo_b" are both
// a_meazo_b_meazo.
func (st *Study) checkSweepNames() error {
	seen := map[string]bool{}
	for _, sp := range st.Sweeps() {
		if seen[sp.Name] {
			return fmt.Errorf("two sweeps are named %s (an experiment's and a variant's names run together): rename one", sp.Name)
		}
		seen[sp.Name] = true
	}
	return nil
}

// check checks the executor's kind and parallel runs, filling in their
// defaults (local; one run per 2 cores, or per GPU when gpus is set).
func (x *Executor) check() error {
	switch x.Kind {
	case "":
		x.Kind = "local"
	case "local", "slurm":
	default:
		return fmt.Errorf("executor.kind: %q: want local or slurm", x.Kind)
	}
	if x.Parallel < 0 {
		return fmt.Errorf("executor.parallel: %d: want a positive number (0: the default)", x.Parallel)
	}
	if x.Parallel == 0 {
		x.Parallel = max(1, runtime.NumCPU()/2)
		if len(x.GPUs) > 0 {
			x.Parallel = len(x.GPUs)
		}
	}
	seen := map[int]bool{}
	for _, g := range x.GPUs {
		if g < 0 {
			return fmt.Errorf("executor.gpus: %d is not a GPU index (0, 1, … as nvidia-smi numbers them)", g)
		}
		if seen[g] {
			return fmt.Errorf("executor.gpus: %d given twice (two runs at a time would share it)", g)
		}
		seen[g] = true
	}
	if len(x.GPUs) > 0 && x.Parallel > len(x.GPUs) {
		return fmt.Errorf("executor.parallel: %d runs at a time but only %d gpus", x.Parallel, len(x.GPUs))
	}
	return nil
}

// check checks the Slurm executor's settings, filling in their defaults
// (checked whatever the executor's kind, as a study may switch to Slurm).
func (s *Slurm) check() error {
	if s.Time == "" {
		s.Time = "1:00:00"
	}
	if s.SelectTime == "" {
		s.SelectTime = "0:10:00"
	}
	if s.CPUsPerTask == 0 {
		s.CPUsPerTask = 2
	}
	if s.Throttle == 0 {
		s.Throttle = 8
	}
	if s.SignalSecs == 0 {
		s.SignalSecs = 300
	}
	for _, k := range []struct {
		key string
		v   int
	}{{"throttle", s.Throttle}, {"cpus_per_task", s.CPUsPerTask}, {"max_array_size", s.MaxArraySize}, {"signal_seconds", s.SignalSecs}} {
		if k.v < 0 {
			return fmt.Errorf("executor.slurm.%s must be positive, got %d", k.key, k.v)
		}
	}
	if _, err := parseSlurmTime(s.Time); err != nil {
		return err
	}
	if _, err := parseSlurmTime(s.SelectTime); err != nil {
		return fmt.Errorf("executor.slurm.select_time: %q is not a Slurm time limit", s.SelectTime)
	}
	for _, l := range append(append([]string{}, s.Sbatch...), s.Setup...) {
		if strings.ContainsAny(l, "\n\r") {
			return fmt.Errorf("executor.slurm: %q: one line per entry", l)
		}
	}
	return nil
}

// nameChars says whether name is a non-empty directory name of letters,
// digits and the extra characters, not starting with '.'.
func nameChars(name, extra string) bool {
	return name != "" && name[0] != '.' &&
		strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"+extra) == ""
}

// checkVariants checks an experiment's variants: each named once, with a
// directory-safe name, and --set lines the sweep does not own.
func checkVariants(where string, vs []Variant) error {
	if vs != nil && len(vs) == 0 {
		return fmt.Errorf("%s.variants: an empty list (leave the key out for none)", where)
	}
	names, titles := map[string]bool{}, map[string]bool{}
	for i, v := range vs {
		vw := fmt.Sprintf("%s.variants.%d", where, i)
		if !nameChars(v.Name, "-_.=") {
			return fmt.Errorf("%s.name: %q: want letters, digits, '-', '_', '.' or '='", vw, v.Name)
		}
		if names[v.Name] {
			return fmt.Errorf("%s.name: %q used twice", vw, v.Name)
		}
		// The figures and tables tell variants apart by their titles: two
		// alike would be drawn as one, their runs averaged together.
		if titles[v.Title()] {
			return fmt.Errorf("%s.label: %q names another variant too", vw, v.Title())
		}
		names[v.Name], titles[v.Title()] = true, true
		if strings.ContainsAny(v.Label, "\n\r") {
			return fmt.Errorf("%s.label: %q: one line", vw, v.Label)
		}
		if strings.Contains(v.Label, "|") { // it heads a column of results.md: a '|' there splits the column
			return fmt.Errorf("%s.label: %q: no '|' (it would split its column of the results table)", vw, v.Label)
		}
		for _, s := range v.Set {
			if err := checkSet(vw+".set", s); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkDirPlace refuses a directory the study names (key: out, demo) that
// is a file, or lies under one: every run would otherwise fail on it with a
// "not a directory" that names a run's lock, not the study's key.
func checkDirPlace(key, dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && !fi.IsDir() && p == filepath.Clean(dir):
			return fmt.Errorf("%s: %s is a file, not a directory (the study's %s directory is made where missing)", key, dir, key)
		case err == nil && !fi.IsDir():
			return fmt.Errorf("%s: %s lies under %s, which is a file, not a directory", key, dir, p)
		case err == nil:
			return nil
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// checkDemoPlace refuses a demo directory that is the study directory or
// holds it: meazo-sweep's own files there (its lock, the sweeps) would make
// it a non-empty directory the demo was not written into, refused as if it
// held the user's files.
func (st *Study) checkDemoPlace() error {
	if st.Demo == "" {
		return nil
	}
	if err := checkDirPlace("demo", st.Demo); err != nil {
		return err
	}
	demo, err1 := filepath.Abs(st.Demo)
	out, err2 := filepath.Abs(st.Out)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	if rel, err := filepath.Rel(demo, out); err == nil && filepath.IsLocal(rel) { // "." too
		return fmt.Errorf("demo: %s is out, or holds it: the demo writes its model/ and data/ there; give it a directory of its own, e.g. %s",
			st.Demo, filepath.Join(st.Out, "demo-data"))
	}
	return nil
}

func checkGrid(prefix string, seeds []uint64, coarse []float64) error {
	seen := map[uint64]bool{}
	for _, s := range seeds {
		if seen[s] {
			return fmt.Errorf("%sseeds: %d given twice", prefix, s)
		}
		seen[s] = true
	}
	for _, r := range coarse {
		if !(r > 0) || math.IsInf(r, 1) {
			return fmt.Errorf("%scoarse: %v is not a positive learning rate", prefix, r)
		}
	}
	sort.Float64s(coarse)
	for i := 1; i < len(coarse); i++ {
		if SameRate(coarse[i], coarse[i-1]) {
			return fmt.Errorf("%scoarse: %v given twice", prefix, coarse[i])
		}
	}
	return nil
}

func checkSet(where, s string) error {
	k, _, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%s: %q: want key=value", where, s)
	}
	switch strings.TrimSpace(k) {
	case "optimizer.name", "optimizer.lr", "train.seed", "output.dir":
		return fmt.Errorf("%s: %q: the sweep sets %s itself", where, s, strings.TrimSpace(k))
	}
	return nil
}

// configOptimizer reads optimizer.name from a meazo-train config.
func configOptimizer(path string) (string, error) {
	b, err := inputfile.ReadFile(path)
	if err != nil {
		return "", err
	}
	var c struct {
		Optimizer struct {
			Name string `yaml:"name"`
		} `yaml:"optimizer"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return c.Optimizer.Name, nil
}

// StudyDoc documents every key of a study file (docs/SWEEPS.md includes it).
func StudyDoc() string {
	var b strings.Builder
	b.WriteString("| key | type | |\n|---|---|---|\n")
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag == "" {
				continue
			}
			ft := f.Type
			kind := ft.Kind().String()
			switch {
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				kind = "list of mappings"
			case ft.Kind() == reflect.Slice:
				kind = map[reflect.Kind]string{reflect.Int64: "list of integers", reflect.Int: "list of integers", reflect.Uint64: "list of integers",
					reflect.Float64: "list of numbers", reflect.String: "list of strings"}[ft.Elem().Kind()]
			case ft.Kind() == reflect.Pointer:
				kind = ft.Elem().Kind().String()
			case ft.Kind() == reflect.Struct:
				kind = "mapping"
			case ft.Kind() == reflect.Float64:
				kind = "number"
			}
			fmt.Fprintf(&b, "| `%s%s` | %s | %s |\n", prefix, tag, kind, f.Tag.Get("doc"))
			if ft.Kind() == reflect.Struct {
				walk(ft, prefix+tag+".")
			}
			if ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct {
				walk(ft.Elem(), prefix+tag+"[].")
			}
		}
	}
	walk(reflect.TypeOf(Study{}), "")
	return b.String()
}
