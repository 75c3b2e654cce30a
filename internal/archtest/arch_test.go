package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/meazo-go/meazo"

// root is the repository root, two levels above this package.
var root = filepath.Join("..", "..")

// docTable reads the table between the imports:begin and imports:end
// markers of docs/ARCHITECTURE.md: package -> the module packages it imports.
func docTable(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	lo, hi := strings.Index(doc, "<!-- imports:begin -->"), strings.Index(doc, "<!-- imports:end -->")
	if lo < 0 || hi < lo {
		t.Fatal("docs/ARCHITECTURE.md: no <!-- imports:begin --> … <!-- imports:end --> table")
	}
	code := regexp.MustCompile("`([^`]+)`")
	table := map[string][]string{}
	for _, line := range strings.Split(doc[lo:hi], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // the header, the rule, the markers
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, dup := table[pkg]; dup {
			t.Errorf("docs/ARCHITECTURE.md lists %s twice", pkg)
		}
		imports := []string{}
		for _, m := range code.FindAllStringSubmatch(cells[3], -1) {
			imports = append(imports, m[1])
		}
		table[pkg] = imports
	}
	if len(table) == 0 {
		t.Fatal("docs/ARCHITECTURE.md: the import table has no rows")
	}
	return table
}

// codeGraph parses every non-test Go file of the module (whatever its build
// constraints, so the graph is the union over platforms and experiments)
// and returns package directory -> the module packages it imports.
func codeGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root {
				return filepath.SkipDir // another module (a run directory, a kit)
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		imports := graph[pkg]
		if imports == nil {
			imports = []string{}
		}
		for _, spec := range f.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if rest, ok := strings.CutPrefix(p, module+"/"); ok && !slices.Contains(imports, rest) {
				imports = append(imports, rest)
			}
		}
		graph[pkg] = imports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, imports := range graph {
		slices.Sort(imports)
	}
	return graph
}

// row renders a package's table row as the doc spells it.
func row(pkg string, imports []string) string {
	cell := "—"
	if len(imports) > 0 {
		cell = "`" + strings.Join(imports, "`, `") + "`"
	}
	return "| `" + pkg + "` | … | " + cell + " |"
}

// TestImportTableIsCurrent: docs/ARCHITECTURE.md's table is the import graph.
func TestImportTableIsCurrent(t *testing.T) {
	table, graph := docTable(t), codeGraph(t)
	for pkg, imports := range graph {
		listed, ok := table[pkg]
		if !ok {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md's import table; add:\n%s", pkg, row(pkg, imports))
			continue
		}
		sorted := slices.Sorted(slices.Values(listed))
		if !slices.Equal(sorted, imports) {
			var extra, missing []string
			for _, p := range imports {
				if !slices.Contains(listed, p) {
					extra = append(extra, p)
				}
			}
			for _, p := range listed {
				if !slices.Contains(imports, p) {
					missing = append(missing, p)
				}
			}
			t.Errorf("package %s imports %v that its row does not allow, and its row lists %v that it does not import; "+
				"if that is intended (check the rules in docs/ARCHITECTURE.md first), the row is:\n%s", pkg, extra, missing, row(pkg, imports))
		}
	}
	for pkg := range table {
		if _, ok := graph[pkg]; !ok {
			t.Errorf("docs/ARCHITECTURE.md's import table lists %s, which has no Go files: remove its row", pkg)
		}
	}
}

// TestLayering checks the rules the table must keep, so that a table edited to
// match a bad import still fails.
func TestLayering(t *testing.T) {
	graph := codeGraph(t)
	forbid := func(pkg string, bad func(imp string) bool, why string) {
		for _, imp := range graph[pkg] {
			if bad(imp) {
				t.Errorf("%s imports %s: %s", pkg, imp, why)
			}
		}
	}
	// noise and update are leaves: the noise contract and the optimizers'
	// element-wise rules, which the engine and every backend follow.
	leaf := func(p string) bool { return p == "noise" || p == "update" || strings.HasPrefix(p, "internal/") }
	forbid("noise", func(p string) bool { return !strings.HasPrefix(p, "internal/") }, "the noise contract depends on nothing of the module")
	forbid("update", func(string) bool { return true }, "the update rules depend on nothing of the module")
	forbid("zo", func(p string) bool { return !leaf(p) }, "the ZO engine depends on no other package of the module but the leaves noise and update (it sees [][]float32 or a Store, and an Objective)")
	forbid("model", func(p string) bool { return p == "zo" || p == "train" || p == "lora" || p == "prompttune" },
		"the model knows adapters only as model.Variant, not the engine, the trainer or the adapter packages")
	forbid("tensor", func(p string) bool { return p != "noise" && p != "update" }, "the Backend interface imports none of its implementations (only the leaves whose contracts its operations follow)")
	for pkg := range graph {
		forbid(pkg, func(p string) bool { return strings.HasPrefix(p, "cmd/") }, "nothing imports a command")
		if pkg != "tensor/backends" && !strings.HasPrefix(pkg, "cmd/") {
			forbid(pkg, func(p string) bool { return p == "tensor/cuda" }, "only tensor/backends links the CUDA backend")
		}
		if pkg == "tensor" || strings.HasPrefix(pkg, "tensor/") {
			forbid(pkg, func(p string) bool { return !strings.HasPrefix(p, "tensor") && !leaf(p) },
				"tensor and the packages under it import nothing above them: only tensor, the leaves noise and update, and internal helpers (the model-level suite is model/modeltest)")
		}
		if !strings.HasPrefix(pkg, "cmd/") {
			forbid(pkg, func(p string) bool { return p == "internal/cli" }, "internal/cli is for commands")
		}
	}
}
