// Package exports is a fixture of TestRootExportsCounts: seven exported identifiers.
package exports

// T is counted, with its exported field and method.
type T struct {
	F int
	g int
}

// Meth is counted; meth is not.
func (T) Meth() {}
func (T) meth() {}

type t struct{ H int }

// M of an unexported type is not counted.
func (t) M() {}

// I is counted, with its method.
type I interface{ M() }

// V is counted.
var V, w = 1, 2

// Fn is counted.
func Fn() {}
