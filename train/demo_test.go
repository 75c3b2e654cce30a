package train

import (
	"path/filepath"
	"testing"

	"github.com/meazo-go/meazo/data"
	"github.com/meazo-go/meazo/tokenizer"
)

// TestDemoTokenizer: the demo's words are single tokens, so a conversation
// is short and each label is one token.
func TestDemoTokenizer(t *testing.T) {
	dir := t.TempDir()
	if err := WriteDemoTokenizer(dir); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	lc, err := (&data.Encoder{Tok: tok}).Candidates(data.Example{Task: data.SST2, ID: "x", Sentence: "what a dull soundtrack "})
	if err != nil {
		t.Fatal(err)
	}
	for c, sp := range lc.Span {
		if sp[1]-sp[0] != 1 {
			t.Errorf("label %q is %d tokens, want 1", data.SST2LabelWords[c], sp[1]-sp[0])
		}
	}
	if n := len(lc.Full[0].IDs); n > 24 {
		t.Errorf("a demo conversation is %d tokens, want at most 24", n)
	}
}

// TestDemoLearns runs the demo's MEAZO run and checks what README.md says it
// shows: the base model is no better than chance, the trained adapter is.
func TestDemoLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("a 600-step run")
	}
	dir := t.TempDir()
	cfg, err := WriteDemo(dir, DemoSteps)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Run(Options{ConfigPath: cfg, Overrides: []string{"optimizer.name=meazo", "optimizer.lr=" + DemoLR["meazo"],
		"train.checkpoint_every=0", "train.eval_every=200", "output.dir=" + filepath.Join(dir, "run")}})
	if err != nil {
		t.Fatal(err)
	}
	base, best := s.Test["base"]["accuracy"], s.Test["best"]["accuracy"]
	t.Logf("base %.3f, best %.3f", base, best)
	if base > 0.6 || best < 0.8 {
		t.Errorf("test accuracy: base %.3f (want at most 0.6), trained %.3f (want at least 0.8)", base, best)
	}
}
