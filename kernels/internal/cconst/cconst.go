// Package cconst evaluates the integer constants of CUDA headers and of Go
// files, for the tests that keep each header constant equal to its Go twin
// (kernels/abi_test.go, and the variants' own tests in kernels/<variant>/).
package cconst

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"regexp"
	"strconv"
	"strings"
)

var (
	cConstRe     = regexp.MustCompile(`(?m)^\s*(?:static\s+)?constexpr\s+\w+\s+([A-Z][A-Z0-9_]*)\s*=\s*([^;]+);`)
	cIntSuffixRe = regexp.MustCompile(`\b(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]+\b`)
	lineComment  = regexp.MustCompile(`//[^\n]*`)
)

// FromC evaluates the `constexpr <type> NAME = expr;` lines of C++ text.
// The expressions (integer literals, + - * << and names defined earlier)
// are C and Go alike once integer suffixes are dropped, so Go's type
// checker evaluates them. A name defined twice is an error.
func FromC(text string) (map[string]uint64, error) {
	text = lineComment.ReplaceAllString(text, "")
	var src strings.Builder
	src.WriteString("package p\n")
	seen := map[string]bool{}
	for _, m := range cConstRe.FindAllStringSubmatch(text, -1) {
		name, expr := m[1], strings.TrimSpace(m[2])
		if seen[name] {
			return nil, fmt.Errorf("constant %s defined twice", name)
		}
		seen[name] = true
		fmt.Fprintf(&src, "const %s = %s\n", name, cIntSuffixRe.ReplaceAllString(expr, "$1"))
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("no constexpr constants found")
	}
	return eval(src.String())
}

// FromGoFile evaluates every top-level constant of one Go file. The const
// declarations are type-checked on their own, so the file's imports do not
// matter as long as its constants refer only to each other.
func FromGoFile(path string) (map[string]uint64, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	var src bytes.Buffer
	src.WriteString("package p\n")
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			if err := printer.Fprint(&src, fset, gd); err != nil {
				return nil, fmt.Errorf("print consts of %s: %w", path, err)
			}
			src.WriteString("\n")
		}
	}
	return eval(src.String())
}

// eval type-checks a package of constant declarations and returns each
// constant's value.
func eval(src string) (map[string]uint64, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "consts.go", src, 0)
	if err != nil {
		return nil, fmt.Errorf("parse constants: %w", err)
	}
	pkg, err := (&types.Config{}).Check("p", fset, []*ast.File{f}, nil)
	if err != nil {
		return nil, fmt.Errorf("evaluate constants: %w", err)
	}
	out := map[string]uint64{}
	for _, name := range pkg.Scope().Names() {
		c, ok := pkg.Scope().Lookup(name).(*types.Const)
		if !ok {
			continue
		}
		v, err := strconv.ParseUint(c.Val().ExactString(), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("constant %s = %s: not an unsigned integer", name, c.Val().ExactString())
		}
		out[name] = v
	}
	return out, nil
}
