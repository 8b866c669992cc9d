// Package nilarg finds the nil arguments of the module's constructors: a nil interface,
// and also an interface that holds a nil pointer, such as a (*local.Limiter)(nil) passed as
// a ratelimit.Limiter. That one compares unequal to nil, is accepted by a check of v == nil,
// and panics on the first call made through it, which for a fallback limiter is the first
// request of the first outage. Constructors call Is once, when they are built; it uses
// reflection, which no request path pays.
package nilarg

import "reflect"

// Is reports whether v is nil or holds a nil pointer, map, slice, channel, function or
// interface.
func Is(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return r.IsNil()
	}
	return false
}

// Typed reports whether v holds a nil of some type while not being nil itself: an
// argument that was meant to be something (an observer, a secondary limiter) where nil
// means "none".
func Typed(v any) bool { return v != nil && Is(v) }
