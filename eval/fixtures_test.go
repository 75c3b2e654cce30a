package eval

import (
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

const tol = 1e-9

func TestSquadFixtures(t *testing.T) {
	type squadCase struct {
		ID                     string    `json:"id"`
		Prediction             string    `json:"prediction"`
		GroundTruths           []string  `json:"ground_truths"`
		ExactMatch             float64   `json:"exact_match"`
		F1                     float64   `json:"f1"`
		PerGroundTruthF1       []float64 `json:"per_ground_truth_f1"`
		NormalizedPrediction   string    `json:"normalized_prediction"`
		NormalizedGroundTruths []string  `json:"normalized_ground_truths"`
	}
	cases := fixture.ReadJSONL[squadCase](t, filepath.Join(fixture.Dir(t), "fixtures/metrics/squad_public.jsonl"))
	if len(cases) != 279 {
		t.Fatalf("got %d cases, want 279", len(cases))
	}
	var totals SquadTotals
	for _, c := range cases {
		if got := NormalizeAnswer(c.Prediction); got != c.NormalizedPrediction {
			t.Errorf("%s: NormalizeAnswer(%q) = %q, want %q", c.ID, c.Prediction, got, c.NormalizedPrediction)
		}
		for i, gt := range c.GroundTruths {
			if got := NormalizeAnswer(gt); got != c.NormalizedGroundTruths[i] {
				t.Errorf("%s: NormalizeAnswer(%q) = %q, want %q", c.ID, gt, got, c.NormalizedGroundTruths[i])
			}
			if got := SquadF1(c.Prediction, gt); math.Abs(got-c.PerGroundTruthF1[i]) > tol {
				t.Errorf("%s: F1 vs ground truth %d = %v, want %v", c.ID, i, got, c.PerGroundTruthF1[i])
			}
		}
		em, f1 := SquadScore(c.Prediction, c.GroundTruths)
		if math.Abs(em-c.ExactMatch) > tol || math.Abs(f1-c.F1) > tol {
			t.Errorf("%s: (EM, F1) = (%v, %v), want (%v, %v)", c.ID, em, f1, c.ExactMatch, c.F1)
		}
		totals.Add(em, f1)
	}
	em, f1 := totals.Result()
	// docs/ALGORITHMS.md's metric rules: public aggregates EM 58.42, F1 67.07 (rounded to 2 decimals).
	if math.Abs(em-58.42) > 0.005 || math.Abs(f1-67.07) > 0.005 {
		t.Errorf("aggregate (EM, F1) = (%.4f, %.4f), want (58.42, 67.07)", em, f1)
	}
}

func TestRougeFixtures(t *testing.T) {
	type tokens struct {
		Prediction []string `json:"prediction"`
		Reference  []string `json:"reference"`
	}
	type rougeCase struct {
		ID           string      `json:"id"`
		Prediction   string      `json:"prediction"`
		Reference    string      `json:"reference"`
		NoStem       RougeScores `json:"nostem"`
		Stem         RougeScores `json:"stem"`
		TokensNoStem tokens      `json:"tokens_nostem"`
		TokensStem   tokens      `json:"tokens_stem"`
	}
	cases := fixture.ReadJSONL[rougeCase](t, filepath.Join(fixture.Dir(t), "fixtures/metrics/rouge_public.jsonl"))
	if len(cases) != 292 {
		t.Fatalf("got %d cases, want 292", len(cases))
	}
	for _, c := range cases {
		for _, v := range []struct {
			stem   bool
			want   RougeScores
			tokens tokens
		}{{false, c.NoStem, c.TokensNoStem}, {true, c.Stem, c.TokensStem}} {
			gotTok := tokens{RougeTokenize(c.Prediction, v.stem), RougeTokenize(c.Reference, v.stem)}
			if !equalTokens(gotTok.Prediction, v.tokens.Prediction) || !equalTokens(gotTok.Reference, v.tokens.Reference) {
				t.Errorf("%s stem=%v: tokens\n got %q / %q\nwant %q / %q", c.ID, v.stem,
					gotTok.Prediction, gotTok.Reference, v.tokens.Prediction, v.tokens.Reference)
			}
			got, err := Rouge(c.Reference, c.Prediction, v.stem)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []struct {
				name      string
				got, want RougeScore
			}{{"rouge1", got.Rouge1, v.want.Rouge1}, {"rouge2", got.Rouge2, v.want.Rouge2},
				{"rougeL", got.RougeL, v.want.RougeL}, {"rougeLsum", got.RougeLsum, v.want.RougeLsum}} {
				if math.Abs(p.got.Precision-p.want.Precision) > tol || math.Abs(p.got.Recall-p.want.Recall) > tol ||
					math.Abs(p.got.FMeasure-p.want.FMeasure) > tol {
					t.Errorf("%s stem=%v %s = %+v, want %+v", c.ID, v.stem, p.name, p.got, p.want)
				}
			}
		}
	}
}

// equalTokens treats nil and empty as equal.
func equalTokens(a, b []string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
