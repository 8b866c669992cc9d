package httpkeys

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// Header returns a Func that keys a request by the value of the header name, labelled with
// the name in lower case: Header("X-API-Key") gives "x-api-key:abc123". The value is the
// header's first line, trimmed of spaces; a value longer than 128 bytes is replaced by a
// digest ("x-api-key:#sha256:" and 32 hex digits), so a client cannot make keys of any
// length. A missing or blank header is an error. The client chooses this value: key by a
// header only where something upstream has checked it (an API gateway that authenticates
// the key), or a client can spread its requests over as many keys as it likes.
func Header(name string) Func {
	label := strings.ToLower(name)
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(r.Header.Get(name))
		if v == "" {
			return "", fmt.Errorf("%w: header %s is missing or blank", args.ErrKeyEmpty, name)
		}
		return keypart.Label(label, v), nil
	}
}

// ContextValue returns a Func that keys a request by r.Context().Value(key), typically a user
// ID that authentication middleware stored with context.WithValue, labelled with label:
// ContextValue("user", userKey{}) gives "user:42". The value may be a string, any integer
// type, or a fmt.Stringer; other types, a missing value and an empty string are errors.
func ContextValue(label string, key any) Func {
	what := "request context value " + label
	return func(r *http.Request) (string, error) {
		return keypart.ContextValue(label, r.Context().Value(key), what)
	}
}

// Method returns a Func that keys a request by its HTTP method: "method:GET". Methods other
// than the eight of RFC 9110 (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) and
// PATCH share "method:OTHER", since a client may send any token as a method. It never
// fails.
func Method() Func {
	return func(r *http.Request) (string, error) {
		switch m := r.Method; m {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
			return "method:" + m, nil
		}
		return "method:OTHER", nil
	}
}

// Pattern returns a Func that keys a request by the http.ServeMux pattern that matched it,
// r.Pattern: "pattern:GET /v1/items/{id}". It never uses the request path, which the client
// chooses, so a client cannot create a key per URL. ServeMux sets r.Pattern as it hands the
// request to the pattern's handler, so the limiting middleware must wrap that handler
// (mux.Handle("GET /v1/items/{id}", limit(h))), not the mux. A request with no pattern (the
// middleware wraps the mux, or no ServeMux routed the request) is an error.
func Pattern() Func {
	return func(r *http.Request) (string, error) {
		if r.Pattern == "" {
			return "", fmt.Errorf("%w: the request matched no ServeMux pattern", args.ErrKeyEmpty)
		}
		return keypart.Label("pattern", r.Pattern), nil
	}
}
