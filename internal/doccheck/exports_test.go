package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
	"testing"
)

// maxRootExports is the most exported identifiers the root package may have: it is the
// contract every backend and wrapper implements, and features live in packages of their own.
const maxRootExports = 80

// TestRootExports counts the root package's exported identifiers (package-level names,
// methods of exported types, the exported fields of exported structs and the methods of
// exported interfaces) and keeps them within maxRootExports.
func TestRootExports(t *testing.T) {
	names := rootExports(t, "../..")
	if len(names) > maxRootExports {
		t.Errorf("the root package exports %d identifiers, more than %d: %s", len(names),
			maxRootExports, strings.Join(names, " "))
	}
	t.Logf("%d exported identifiers", len(names))
}

// TestRootExportsCounts checks the count on a package of known exports.
func TestRootExportsCounts(t *testing.T) {
	got := rootExports(t, "testdata/exports")
	want := []string{"Fn", "I", "I.M", "T", "T.F", "T.Meth", "V"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("exports of testdata/exports: %v, want %v", got, want)
	}
}

// rootExports returns the exported identifiers of the package in dir, its tests left out.
func rootExports(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	keep := func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }
	pkgs, err := parser.ParseDir(fset, dir, keep, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				names = append(names, declExports(d)...)
			}
		}
	}
	slices.Sort(names)
	return names
}

// declExports returns the exported identifiers d declares.
func declExports(d ast.Decl) []string {
	var names []string
	switch d := d.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() {
			break
		}
		if d.Recv == nil {
			return []string{d.Name.Name}
		}
		recv := d.Recv.List[0].Type
		if star, ok := recv.(*ast.StarExpr); ok {
			recv = star.X
		}
		if id, ok := recv.(*ast.Ident); ok && id.IsExported() {
			names = append(names, id.Name+"."+d.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if n.IsExported() {
						names = append(names, n.Name)
					}
				}
			case *ast.TypeSpec:
				if s.Name.IsExported() {
					names = append(names, s.Name.Name)
					names = append(names, memberExports(s)...)
				}
			}
		}
	}
	return names
}

// memberExports returns the exported fields of the struct, or methods of the interface, s
// declares, each named Type.Member.
func memberExports(s *ast.TypeSpec) []string {
	var list *ast.FieldList
	switch t := s.Type.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return nil
	}
	var names []string
	for _, field := range list.List {
		for _, n := range field.Names {
			if n.IsExported() {
				names = append(names, s.Name.Name+"."+n.Name)
			}
		}
	}
	return names
}
