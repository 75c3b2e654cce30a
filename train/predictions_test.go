package train

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/eval"
	"github.com/meazo-go/meazo/rundir"
)

// TestExampleScores: a generated answer's own scores, in 0-1 under the
// aggregate's keys, worked out by hand from the metrics' definitions
// (SQuAD's normalized EM and bag-of-tokens F1, the best over the
// references; ROUGE F-measures, the best reference's).
func TestExampleScores(t *testing.T) {
	for _, c := range []struct {
		task data.Task
		ex   data.Example
		pred string
		want map[string]float64
	}{
		// "in Paris" shares "paris" with the prediction: P 1, R 1/2.
		{data.SQuAD, data.Example{Answers: []string{"France", "in Paris"}}, "Paris",
			map[string]float64{"exact_match": 0, "f1": 2.0 / 3}},
		{data.SQuAD, data.Example{Answers: []string{"France", "the Paris"}}, "Paris.",
			map[string]float64{"exact_match": 1, "f1": 1}},
		// 3 of the summary's 6 unigrams, 2 of its 5 bigrams, an LCS of 3.
		{data.XSum, data.Example{Summary: "The cat sat on the mat."}, "the cat sat",
			map[string]float64{"rouge1": 2.0 / 3, "rouge2": 4.0 / 7, "rougeL": 2.0 / 3, "rougeLsum": 2.0 / 3}},
		// The completion matches once normalized ("a" dropped); its ROUGE
		// keeps "a": 2 of 3 unigrams, 1 of 2 bigrams. "bad" scores 0.
		{data.Generation, data.Example{Completion: "a great film", References: []string{"bad"}}, "great film",
			map[string]float64{"exact_match": 1, "f1": 1, "rouge1": 0.8, "rouge2": 2.0 / 3, "rougeL": 0.8, "rougeLsum": 0.8}},
		{data.Generation, data.Example{Completion: "terrible", References: []string{"bad film"}}, "a bad one",
			map[string]float64{"exact_match": 0, "f1": 0.5, "rouge1": 0.4, "rouge2": 0, "rougeL": 0.4, "rougeLsum": 0.4}},
	} {
		e := &evaluator{task: c.task}
		scores, err := e.exampleScores(c.ex, c.pred)
		if err != nil {
			t.Fatal(err)
		}
		p := generatedPrediction(c.task, c.ex, c.pred, scores)
		if len(p.Scores) != len(c.want) {
			t.Errorf("%s %q: scores %v, want %v", c.task, c.pred, p.Scores, c.want)
		}
		for k, w := range c.want {
			if got, ok := p.Scores[k]; !ok || math.Abs(got-w) > 1e-12 {
				t.Errorf("%s %q: %s = %v, want %v", c.task, c.pred, k, got, w)
			}
		}
		if p.Generated.Text != c.pred || !slices.Equal(p.Generated.References, references(c.task, c.ex)) || p.Labelled != nil {
			t.Errorf("%s %q: record %+v", c.task, c.pred, p.Generated)
		}
	}
}

// TestPredictionsMatchMetrics evaluates the demo model on each text task
// with OnPrediction: one record per example in the file's order, each with
// its input, and the aggregate metrics are, bit for bit, 100 × the mean of
// the records' scores (generation tasks) or the fraction of them right
// (label tasks), in batches that split the file unevenly.
func TestPredictionsMatchMetrics(t *testing.T) {
	dir, _ := demoConfig(t, 1)
	m, tok := demoModel(t, dir)
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The references hold words the demo model generates (its few
	// adjectives), so that the scores are not all 0 (checkGenerated
	// insists on some between 0 and 1).
	squad := write("squad.jsonl",
		`{"id":"q1","title":"T","context":"Paris is in France.","question":"Where is Paris?","answers":{"text":["France","brilliant charming"],"answer_start":[12,0]}}`,
		`{"id":"q2","title":"T","context":"The film was charming.","question":"How was the film?","answers":{"text":["great","charming moving"],"answer_start":[0,13]}}`,
		`{"id":"q3","title":"T","context":"It rained.","question":"What happened?","answers":{"text":["a moving story"],"answer_start":[0]}}`,
		`{"id":"q4","title":"T","context":"A dull plot.","question":"How was the plot?","answers":{"text":["dull"],"answer_start":[2]}}`)
	xsum := write("xsum.jsonl",
		`{"id":"x1","document":"the film is great and the cast is superb","summary":"a painful film"}`,
		`{"id":"x2","document":"the plot is dull","summary":"moving and superb"}`,
		`{"id":"x3","document":"a terrible film","summary":"terrible"}`)
	gen := write("gen.jsonl",
		`{"prompt":"the film is dull","completion":"terrible","references":["bad"]}`,
		`{"id":"g2","prompt":"a superb cast","completion":"great","references":["painful film"]}`,
		`{"prompt":"the plot is great","completion":"great","references":["good","moving painful"]}`,
		`{"prompt":"what a film","completion":"awful awful"}`)
	cls := write("cls.jsonl",
		`{"text":"what a dull film","label":"terrible"}`, `{"text":"a superb cast","label":"great"}`,
		`{"text":"the plot is great","label":1}`, `{"id":"c4","text":"terrible","label":0}`, `{"text":"a fine film","label":"great"}`)
	for _, c := range []struct {
		opts EvalOptions
		ids  []string
	}{
		{EvalOptions{Task: "squad", Data: squad}, []string{"q1", "q2", "q3", "q4"}},
		{EvalOptions{Task: "xsum", Data: xsum}, []string{"x1", "x2", "x3"}},
		{EvalOptions{Task: "generation", Data: gen}, []string{"line 1", "g2", "line 3", "line 4"}},
		{EvalOptions{Task: "generation", Data: gen, RougeStem: true}, []string{"line 1", "g2", "line 3", "line 4"}},
		{EvalOptions{Task: "classification", Data: cls, Labels: []string{"terrible", "great"}, Instruction: "Rate it."},
			[]string{"line 1", "line 2", "line 3", "c4", "line 5"}},
		{EvalOptions{Task: "sst2", Data: filepath.Join(dir, "data", "dev.tsv"), MaxExamples: 7}, []string{"0", "1", "2", "3", "4", "5", "6"}},
	} {
		name := fmt.Sprintf("%s stem=%v", c.opts.Task, c.opts.RougeStem)
		var recs []Prediction
		o := c.opts
		o.BatchSize, o.MaxNewTokens = 3, 4
		o.OnPrediction = func(p Prediction) { recs = append(recs, p) }
		res, err := Evaluate(m, tok, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		exs, _, err := data.ReadAll(o.Data, data.Task(o.Task), data.ReadOptions{Limit: o.MaxExamples, Own: ownTask(data.Task(o.Task), o.Labels, o.Instruction)})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i, r := range recs {
			ids = append(ids, r.ID)
			if r.Input != exampleInput(exs[i]) {
				t.Errorf("%s: record %d has input %+v, the file's example %+v", name, i, r.Input, exs[i])
			}
		}
		if !slices.Equal(ids, c.ids) {
			t.Fatalf("%s: records of %q, want %q (the file's order)", name, ids, c.ids)
		}
		if task := data.Task(o.Task); task == data.SST2 || task == data.Classification {
			checkLabelled(t, name, recs, exs, res)
		} else {
			checkGenerated(t, name, task, o.RougeStem, recs, res)
		}
	}
}

// checkGenerated checks each generation record's scores against the
// metrics of its own text and references, and the aggregate metrics
// against 100 × the mean of the records' scores, summed in order as the
// evaluation sums them: bit for bit.
func checkGenerated(t *testing.T, name string, task data.Task, stem bool, recs []Prediction, res map[string]float64) {
	t.Helper()
	sums := map[string]float64{}
	partial := 0 // scores strictly between 0 and 1: the sums are not trivially 0 or a count
	for _, r := range recs {
		g := r.Generated
		if g == nil || r.Labelled != nil {
			t.Fatalf("%s: record %q is not a generation's: %+v", name, r.ID, r)
		}
		em, f1 := eval.SquadScore(g.Text, g.References)
		rouge, err := eval.RougeMulti(g.References, g.Text, stem)
		if err != nil {
			t.Fatal(err)
		}
		own := map[string]float64{"exact_match": em, "f1": f1, "rouge1": rouge.Rouge1.FMeasure, "rouge2": rouge.Rouge2.FMeasure,
			"rougeL": rouge.RougeL.FMeasure, "rougeLsum": rouge.RougeLsum.FMeasure}
		for _, k := range generatedKeys(task) {
			if g.Scores[k] != own[k] {
				t.Errorf("%s: record %q: %s = %v, but %q against %q scores %v", name, r.ID, k, g.Scores[k], g.Text, g.References, own[k])
			}
			sums[k] += g.Scores[k]
			if g.Scores[k] > 0 && g.Scores[k] < 1 {
				partial++
			}
		}
	}
	if partial == 0 {
		t.Errorf("%s: no score between 0 and 1 (the demo model's generations no longer share words with the references?): %v", name, res)
	}
	if len(res) != len(generatedKeys(task)) {
		t.Errorf("%s: metrics %v", name, res)
	}
	for _, k := range generatedKeys(task) {
		if mean := 100 * sums[k] / float64(len(recs)); res[k] != mean {
			t.Errorf("%s: %s is %v, 100 × the records' mean %v", name, k, res[k], mean)
		}
	}
}

// checkLabelled checks each label record against its example's gold label
// and the accuracy against the fraction of records right.
func checkLabelled(t *testing.T, name string, recs []Prediction, exs []data.Example, res map[string]float64) {
	t.Helper()
	right := 0
	for i, r := range recs {
		l := r.Labelled
		if l == nil || r.Generated != nil {
			t.Fatalf("%s: record %q is not a label's: %+v", name, r.ID, r)
		}
		words := data.SST2LabelWords[:]
		if exs[i].Own != nil {
			words = exs[i].Own.Labels
		}
		if l.Gold != exs[i].Label || l.Correct != (l.Predicted == l.Gold) || l.GoldLabel != words[l.Gold] || l.PredictedLabel != words[l.Predicted] {
			t.Errorf("%s: record %q: %+v; the example's label is %d", name, r.ID, *l, exs[i].Label)
		}
		if l.Correct {
			right++
		}
	}
	if want := float64(right) / float64(len(recs)); res["accuracy"] != want || len(res) != 1 {
		t.Errorf("%s: metrics %v, want accuracy %v (%d of %d records right)", name, res, want, right, len(recs))
	}
}

// TestImagePredictions: EvaluateImages hands over one record per image,
// in the file's order, whose row, label and correctness give its accuracy.
func TestImagePredictions(t *testing.T) {
	m, proc := tinyViT(t)
	defer m.Free()
	rows, err := data.ReadImageParquet(petsTest, m.Config.NumLabels)
	if err != nil {
		t.Fatal(err)
	}
	var recs []Prediction
	res, err := EvaluateImages(m, proc, EvalOptions{Task: "pets", Data: petsTest, BatchSize: 5, Threads: 1,
		OnPrediction: func(p Prediction) { recs = append(recs, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(rows) {
		t.Fatalf("%d records of %d images", len(recs), len(rows))
	}
	right := 0
	for i, r := range recs {
		l := r.Labelled
		if l == nil || r.Image == nil || *r.Image != i || r.ID != rows[i].ID || l.Gold != rows[i].Label ||
			l.Correct != (l.Predicted == l.Gold) || l.Predicted < 0 || l.Predicted >= m.Config.NumLabels || l.PredictedLabel != "" {
			t.Errorf("record %d: %+v %+v, the file's image %q has label %d", i, r, l, rows[i].ID, rows[i].Label)
			continue
		}
		if l.Correct {
			right++
		}
	}
	if want := float64(right) / float64(len(recs)); res["accuracy"] != want {
		t.Errorf("accuracy %v, want %v (%d of %d records right)", res["accuracy"], want, right, len(recs))
	}
}

// checkRunAnswers checks the answer files a finished run wrote in dir
// (eval.predictions): one for each test evaluation of its summary s, a
// record per test example, whose scores make the summary's metrics bit for
// bit; it returns the files' contents by evaluation.
func checkRunAnswers(t *testing.T, dir string, s *Summary) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	var firstIDs []string // every evaluation has a record of each test example, in the same order
	for name, res := range s.Test {
		b, err := os.ReadFile(filepath.Join(dir, rundir.PredictionsFile(name)))
		if err != nil {
			t.Fatalf("run %s: %v", dir, err)
		}
		var recs []Prediction
		for line := range strings.Lines(string(b)) {
			var p Prediction
			if err := json.Unmarshal([]byte(line), &p); err != nil {
				t.Fatalf("%s: %v", rundir.PredictionsFile(name), err)
			}
			recs = append(recs, p)
		}
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.ID)
		}
		if len(recs) == 0 || (firstIDs != nil && !slices.Equal(ids, firstIDs)) {
			t.Fatalf("%s: records of examples %q; another evaluation's: %q", rundir.PredictionsFile(name), ids, firstIDs)
		}
		firstIDs = ids
		if recs[0].Labelled != nil {
			right := 0
			for _, r := range recs {
				if r.Correct {
					right++
				}
			}
			if acc := float64(right) / float64(len(recs)); res["accuracy"] != acc {
				t.Errorf("%s: accuracy %v in the summary, %d of %d records right", rundir.PredictionsFile(name), res["accuracy"], right, len(recs))
			}
		} else {
			for k, v := range res {
				sum := 0.0
				for _, r := range recs {
					sum += r.Scores[k]
				}
				if mean := 100 * sum / float64(len(recs)); v != mean {
					t.Errorf("%s: %s %v in the summary, 100 × the records' mean %v", rundir.PredictionsFile(name), k, v, mean)
				}
			}
		}
		files[name] = b
	}
	if len(files) == 0 {
		t.Fatalf("run %s: no test evaluation", dir)
	}
	return files
}

// TestEvaluateImagesDetaches: EvaluateImages leaves the ViT it is given as
// it was, without the adapter it scored, merged (--merge) or not.
func TestEvaluateImagesDetaches(t *testing.T) {
	m, proc := tinyViT(t)
	defer m.Free()
	for _, merge := range []bool{false, true} {
		if _, err := EvaluateImages(m, proc, EvalOptions{Task: "pets", Data: petsTest, BatchSize: 5, Threads: 1, MaxExamples: 2,
			Adapter: filepath.Join(vitTiny, "lora"), Merge: merge}); err != nil {
			t.Fatal(err)
		}
		if m.Adapter != nil {
			t.Errorf("merge %v: the adapter is still attached to the ViT after the evaluation", merge)
		}
	}
}

// TestResultsLineNamesEveryPredictionsFile: a finished run's last line
// names each predictions file it wrote (the best, the last and the base
// weights answer differently), not only the best one's.
func TestResultsLineNamesEveryPredictionsFile(t *testing.T) {
	dir, cfg := demoConfig(t, 2)
	out := filepath.Join(dir, "run")
	var log strings.Builder
	set := []string{"train.eval_every=1", "task.max_train=32", "task.max_validation=8", "task.max_test=4", "eval.base=true", "output.dir=" + out}
	if _, err := Run(Options{ConfigPath: cfg, Overrides: set, Log: &log}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	last := lines[len(lines)-1]
	for _, name := range rundir.PredictionsFiles() {
		if p := filepath.Join(out, name); !strings.Contains(last, p) {
			t.Errorf("the run's last line does not name %s:\n%s", p, last)
		}
	}
}
