// Command longfuncs lists the functions longer than -max lines (80) and the
// files longer than -file lines (600) under the folders it is given, longest
// first; generated files ("Code generated … DO NOT EDIT.") and, without
// -tests, test files are left out. It prints nothing when every function
// and file is within bounds: the project's style (functions under ~80
// lines, files under ~600), checked by hand rather than by a test, since a
// table of cases may rightly run longer.
//
//	go run ./scripts/longfuncs                       # train sweep zo model tensor
//	go run ./scripts/longfuncs -max 60 plot results  # other folders, another bound
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// defaultDirs are the packages issue 32 holds to the bounds.
var defaultDirs = []string{"train", "sweep", "zo", "model", "tensor"}

// long is a function or file over its bound.
type long struct {
	lines int
	what  string
}

func main() {
	maxFunc := flag.Int("max", 80, "list functions longer than this many lines")
	maxFile := flag.Int("file", 600, "list files longer than this many lines")
	tests := flag.Bool("tests", false, "include _test.go files")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = defaultDirs
	}
	var funcs, files []long
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				!*tests && strings.HasSuffix(path, "_test.go") || generated(path) {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			if n := fset.Position(f.End()).Line; n > *maxFile {
				files = append(files, long{n, path})
			}
			funcs = append(funcs, longFuncs(fset, f, path, *maxFunc)...)
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "longfuncs:", err)
			os.Exit(1)
		}
	}
	report("", funcs)
	report("files:\n", files)
}

// longFuncs lists f's functions (declared, or literals) longer than limit lines.
func longFuncs(fset *token.FileSet, f *ast.File, path string, limit int) []long {
	var out []long
	ast.Inspect(f, func(n ast.Node) bool {
		var name string
		switch d := n.(type) {
		case *ast.FuncDecl:
			if d.Body == nil {
				return false
			}
			name = d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = "(" + typeName(d.Recv.List[0].Type) + ")." + name
			}
		case *ast.FuncLit:
			name = "func literal"
		default:
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(n.End())
		if lines := end.Line - start.Line + 1; lines > limit {
			out = append(out, long{lines, fmt.Sprintf("%s:%d %s", path, start.Line, name)})
		}
		return true
	})
	return out
}

// typeName is a receiver's type name, without * or type parameters.
func typeName(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.StarExpr:
		return typeName(t.X)
	case *ast.IndexExpr:
		return typeName(t.X)
	case *ast.IndexListExpr:
		return typeName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// generated reports whether the file says it is generated, on a line of
// its own before the package clause, as go generate's convention asks.
func generated(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "// Code generated ") && strings.HasSuffix(line, " DO NOT EDIT.") {
			return true
		}
		if strings.HasPrefix(line, "package ") {
			return false
		}
	}
	return false
}

func report(head string, ls []long) {
	if len(ls) == 0 {
		return
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].lines > ls[j].lines })
	fmt.Print(head)
	for _, l := range ls {
		fmt.Printf("%5d  %s\n", l.lines, l.what)
	}
}
