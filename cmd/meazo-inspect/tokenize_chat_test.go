package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meazo-go/meazo/internal/fixture"
)

// tokFixtures is the shared tokenizer fixture folder, or a skip.
func tokFixtures(t *testing.T) string {
	return fixture.Dir(t, "fixtures", "tokenizers")
}

func tokFixtureLines(t *testing.T, path string) []map[string]any {
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(raw), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// runLines feeds lines to a subcommand and returns its output lines decoded.
func runLines(t *testing.T, name, model string, in []any) []map[string]json.RawMessage {
	var stdin, stdout bytes.Buffer
	for _, v := range in {
		b, _ := json.Marshal(v)
		stdin.Write(append(b, '\n'))
	}
	if err := commands.Run(name, []string{"--model", model}, &stdin, &stdout); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s output %q: %v", name, sc.Text(), err)
		}
		out = append(out, m)
	}
	if len(out) != len(in) {
		t.Fatalf("%s: %d output lines for %d input lines", name, len(out), len(in))
	}
	return out
}

func ints(t *testing.T, raw json.RawMessage) []int {
	var v []int
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func toInts(v any) []int {
	var out []int
	for _, x := range v.([]any) {
		out = append(out, int(x.(float64)))
	}
	return out
}

// TestTokenizeCommand runs the public corpus through `meazo-inspect tokenize`.
func TestTokenizeCommand(t *testing.T) {
	fx := tokFixtures(t)
	for _, m := range []string{"llama3.2", "qwen3"} {
		recs := tokFixtureLines(t, filepath.Join(fx, "ref", "public", m+".corpus.jsonl"))
		var in []any
		for _, r := range recs {
			in = append(in, map[string]any{"text": r["text"]})
		}
		out := runLines(t, "tokenize", filepath.Join(fx, m), in)
		for i, r := range recs {
			if !slices.Equal(ints(t, out[i]["ids"]), toInts(r["ids"])) || !slices.Equal(ints(t, out[i]["ids_with_special"]), toInts(r["ids_with_special"])) {
				t.Errorf("%s corpus line %d: ids differ", m, i+1)
			}
		}
	}
}

// TestChatCommand runs the public chat renders through `meazo-inspect chat`.
func TestChatCommand(t *testing.T) {
	fx := tokFixtures(t)
	for _, m := range []string{"llama3.2", "qwen3"} {
		recs := tokFixtureLines(t, filepath.Join(fx, "ref", "public", m+".chat.jsonl"))
		var in []any
		for _, r := range recs {
			line := map[string]any{"messages": r["messages"]}
			for k, v := range r["template_kwargs"].(map[string]any) {
				if !strings.HasSuffix(k, "_token") {
					line[k] = v
				}
			}
			in = append(in, line)
		}
		out := runLines(t, "chat", filepath.Join(fx, m), in)
		for i, r := range recs {
			var rendered string
			json.Unmarshal(out[i]["rendered"], &rendered)
			if rendered != r["rendered"].(string) || !slices.Equal(ints(t, out[i]["ids"]), toInts(r["ids"])) {
				t.Errorf("%s chat line %d (%s): render or ids differ", m, i+1, r["variant"])
			}
		}
	}
}

func TestTokenizeCommandBadLine(t *testing.T) {
	fx := tokFixtures(t)
	var stdout bytes.Buffer
	err := commands.Run("tokenize", []string{"--model", filepath.Join(fx, "qwen3")}, strings.NewReader("{\"text\":\"a\"}\n{\"txt\":1}\n"), &stdout)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), `"text"`) {
		t.Fatalf("error %v should name line 2 and field text", err)
	}
}

// TestTokenizerCommandsRefuseRunDirs: example, tokenize and chat name a run
// directory or a saved adapter given as --model for what it is (as forward
// and generate do), not as a missing tokenizer.json.
func TestTokenizerCommandsRefuseRunDirs(t *testing.T) {
	run := t.TempDir()
	best := filepath.Join(run, "best")
	os.MkdirAll(best, 0o755)
	os.WriteFile(filepath.Join(best, "adapter_config.json"), []byte(`{"peft_type": "LORA", "base_model_name_or_path": "org/base"}`), 0o644)
	data := filepath.Join(t.TempDir(), "d.tsv")
	os.WriteFile(data, []byte("sentence\tlabel\ngood\t1\n"), 0o644)
	for _, c := range []struct{ dir, want string }{
		{run, "--model " + run + ": a run directory, not a model"},
		{best, "--model " + best + `: a saved adapter (adapter_config.json, no config.json), not a model: the model is its base model (its adapter_config.json names "org/base")`},
	} {
		for _, cmd := range [][]string{{"example", "--task", "sst2", "--data", data}, {"tokenize"}, {"chat"}} {
			err := commands.Run(cmd[0], append([]string{"--model", c.dir}, cmd[1:]...), strings.NewReader(""), io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s --model %s: %v, want %q", cmd[0], c.dir, err, c.want)
			}
		}
	}
}
