package ratelimit_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// apiSurface counts the exported identifiers of the package in dir as a reviewer counts an
// API surface: every exported package-level name (each name of a grouped const or var
// block), the exported methods of exported types, the exported fields of exported structs
// and the methods of exported interfaces, over the package's non-test files.
func apiSurface(t *testing.T, dir string) (n int, names []string) {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	add := func(name string) { names = append(names, name) }
	exportedType := map[string]bool{}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.TYPE {
					for _, spec := range g.Specs {
						if ts := spec.(*ast.TypeSpec); ts.Name.IsExported() {
							exportedType[ts.Name.Name] = true
						}
					}
				}
			}
		}
	}
	for _, pkg := range pkgs {
		for _, f := range pkg.Files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						add(d.Name.Name)
						continue
					}
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if id, ok := recv.(*ast.Ident); ok && exportedType[id.Name] {
						add(id.Name + "." + d.Name.Name)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.ValueSpec:
							for _, id := range s.Names {
								if id.IsExported() {
									add(id.Name)
								}
							}
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							add(s.Name.Name)
							switch ty := s.Type.(type) {
							case *ast.StructType:
								for _, fl := range ty.Fields.List {
									for _, id := range fl.Names {
										if id.IsExported() {
											add(s.Name.Name + "." + id.Name)
										}
									}
								}
							case *ast.InterfaceType:
								for _, m := range ty.Methods.List {
									for _, id := range m.Names {
										if id.IsExported() {
											add(s.Name.Name + "." + id.Name)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return len(names), names
}

// The root package is the contract: the seeds' types and errors, the multi-limit and
// inspection capabilities. Observation lives in observe, priorities in priority, the
// middleware's answer to a failing limiter in the middleware (WithFailClosed), the bounds
// of the arguments in internal/args. Run with -v to see
// the names.
func TestAPISurface(t *testing.T) {
	n, names := apiSurface(t, ".")
	t.Logf("%d exported identifiers: %s", n, strings.Join(names, " "))
	if n > maxSurface {
		t.Errorf("the root package exports %d identifiers, more than %d", n, maxSurface)
	}
}

// maxSurface bounds the root package's exported identifiers: the contract (with As, the
// one way to find a capability, and ErrInvalidArgument, the one error for an argument a
// limiter can never take), the text of a Limit (ParseLimit, MarshalText, UnmarshalText),
// and the algorithm as a property of a limit (Limit.Algorithm, DefaultAlgorithm), calendar
// quotas (CalendarQuota, Quota, Limit.Period, Period and its four fields, PeriodUnit, Day,
// Week, Month), usage carried across a change of a limit's numbers (Limit.KeepUsage),
// Unlimited, a request exempt on purpose rather than by a zero Limit, and the settle and
// reserve capabilities (Settler, with Settle and Hold; Reserver).
const maxSurface = 80
