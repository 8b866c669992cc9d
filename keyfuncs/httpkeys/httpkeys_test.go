package httpkeys_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// answer is a handler that writes the key f finds, or "error: " and the error. An error that
// does not wrap ratelimit.ErrInvalidArgument is a 500, which the helpers below reject.
func answer(f httpkeys.Func) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := f(r)
		switch {
		case err != nil && !errors.Is(err, ratelimit.ErrInvalidArgument):
			http.Error(w, "error does not wrap ErrKeyEmpty: "+err.Error(), http.StatusInternalServerError)
		case err != nil:
			fmt.Fprintf(w, "error: %v", err)
		case key == "" || len(key) > args.MaxKeyLen:
			http.Error(w, fmt.Sprintf("key of %d bytes", len(key)), http.StatusInternalServerError)
		default:
			fmt.Fprint(w, key)
		}
	})
}

// keyOf serves req with answer(f) registered on a ServeMux at pattern, and returns the body.
func keyOf(t *testing.T, f httpkeys.Func, pattern string, req *http.Request) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle(pattern, answer(f))
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, req)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	return w.Body.String()
}

type userKey struct{}

type userID int

func (u userID) String() string { return fmt.Sprintf("u%d", int(u)) }

func TestValues(t *testing.T) {
	withUser := func(v any) func(*http.Request) *http.Request {
		return func(r *http.Request) *http.Request {
			return r.WithContext(context.WithValue(r.Context(), userKey{}, v))
		}
	}
	tests := []struct {
		name    string
		f       httpkeys.Func
		pattern string
		method  string
		path    string
		header  []string // "Name", "value", ...
		prepare func(*http.Request) *http.Request
		want    string
	}{
		{"header", httpkeys.Header("X-API-Key"), "/", "GET", "/", []string{"X-API-Key", " abc "}, nil, "x-api-key:abc"},
		// The first line counts, as http.Header.Get reads it.
		{"header first line", httpkeys.Header("X-API-Key"), "/", "GET", "/",
			[]string{"X-API-Key", "abc", "X-API-Key", "def"}, nil, "x-api-key:abc"},
		{"header missing", httpkeys.Header("X-API-Key"), "/", "GET", "/", nil, nil,
			"error: ratelimit: empty key: header X-API-Key is missing or blank"},
		{"header blank", httpkeys.Header("X-API-Key"), "/", "GET", "/", []string{"X-API-Key", " \t"}, nil,
			"error: ratelimit: empty key: header X-API-Key is missing or blank"},
		// 129 bytes: digested, sha256("k" × 129)[:16] in hex (Python's hashlib).
		{"header long", httpkeys.Header("X-API-Key"), "/", "GET", "/",
			[]string{"X-API-Key", strings.Repeat("k", 129)}, nil, "x-api-key:#sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		// The digest's text sent as a value is escaped, so it cannot share the long value's bucket.
		{"header digest text", httpkeys.Header("X-API-Key"), "/", "GET", "/",
			[]string{"X-API-Key", "#sha256:9094034fb2d0ce2e407c9b260f2806ab"}, nil,
			"x-api-key:%23sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		{"context string", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, withUser("alice"), "user:alice"},
		{"context int", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, withUser(42), "user:42"},
		{"context stringer", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, withUser(userID(7)), "user:u7"},
		{"context missing", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, nil,
			"error: ratelimit: empty key: request context value user is missing"},
		{"context empty", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, withUser(""),
			"error: ratelimit: empty key: request context value user is empty"},
		{"context pointer refused", httpkeys.ContextValue("user", userKey{}), "/", "GET", "/", nil, withUser(&struct{}{}),
			"error: ratelimit: empty key: request context value user: value of type *struct {} cannot be a key: use a string, an integer or a fmt.Stringer"},
		{"method", httpkeys.Method(), "/", "PATCH", "/", nil, nil, "method:PATCH"},
		{"method unknown", httpkeys.Method(), "/", "BREW", "/", nil, nil, "method:OTHER"},
		// The pattern, never the path the client chose.
		{"pattern", httpkeys.Pattern(), "GET /v1/items/{id}", "GET", "/v1/items/12345", nil, nil, "pattern:GET /v1/items/{id}"},
		{"pattern with host", httpkeys.Pattern(), "example.com/v1/", "GET", "http://example.com/v1/x/y", nil, nil,
			"pattern:example.com/v1/"},
		{"compose", httpkeys.Compose(httpkeys.ContextValue("user", userKey{}), httpkeys.Pattern()), "GET /v1/items/{id}",
			"GET", "/v1/items/9", nil, withUser(42), "user:42|pattern:GET /v1/items/{id}"},
		// Label escapes the '|' ("x-tenant:a%7Cmethod:PUT"); Compose escapes that part's '%'.
		{"compose escapes", httpkeys.Compose(httpkeys.Header("X-Tenant"), httpkeys.Method()), "/", "GET", "/",
			[]string{"X-Tenant", "a|method:PUT"}, nil, "x-tenant:a%257Cmethod:PUT|method:GET"},
		{"compose of one", httpkeys.Compose(httpkeys.Method()), "/", "GET", "/", nil, nil, "method:GET"},
		{"compose fails with a part", httpkeys.Compose(httpkeys.Method(), httpkeys.ContextValue("user", userKey{})), "/",
			"GET", "/", nil, nil, "error: ratelimit: empty key: request context value user is missing"},
		// base64url(HMAC-SHA256("k", "ip:192.0.2.1")[:16]), from Python's hmac: the value
		// keyfuncs.Hashed and grpckeys.Hashed give for the same key.
		{"hashed", httpkeys.Hashed([]byte("k"), httpkeys.ClientIP()), "/", "GET", "/", nil, nil, "h:#avoJEoIKCspjgRPYJH1IFA"},
		{"hashed fails with f", httpkeys.Hashed([]byte("k"), httpkeys.Header("X-API-Key")), "/", "GET", "/", nil, nil,
			"error: ratelimit: empty key: header X-API-Key is missing or blank"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil) // RemoteAddr 192.0.2.1:1234
			for i := 0; i+1 < len(tt.header); i += 2 {
				req.Header.Add(tt.header[i], tt.header[i+1])
			}
			if tt.prepare != nil {
				req = tt.prepare(req)
			}
			assert.Equal(t, tt.want, keyOf(t, tt.f, tt.pattern, req))
		})
	}
}

// Outside a ServeMux, or in a middleware that wraps the mux, a request has no pattern.
func TestPatternEmpty(t *testing.T) {
	_, err := httpkeys.Pattern()(httptest.NewRequest(http.MethodGet, "/v1/items/1", nil))
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.EqualError(t, err, "ratelimit: empty key: the request matched no ServeMux pattern")
}

// No key is longer than args.MaxKeyLen, however long the values the client sends.
func TestKeysAreBounded(t *testing.T) {
	f := httpkeys.Compose(httpkeys.Header("X-A"), httpkeys.Header("X-B"), httpkeys.Header("X-C"), httpkeys.Method())
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	long := strings.Repeat("|", 128) // the longest value kept, as "%7C" × 128
	for _, h := range []string{"X-A", "X-B", "X-C"} {
		req.Header.Set(h, long)
	}
	// Each header part is "x-a:" + "%7C" × 128 (388 bytes), "x-a:" + "%257C" × 128 once
	// Compose escapes it; with "method:GET" the joined text takes 1945 bytes, so the key is
	// its SHA-256: base64url of the first 16 bytes, from Python's hashlib.
	assert.Equal(t, "h:#ffEVVYDfmDF3E0aKIbD9Kw", keyOf(t, f, "/", req))
}

func TestPanics(t *testing.T) {
	assert.PanicsWithValue(t, "httpkeys: WithIPv6Prefix(129): bits must be between 0 and 128",
		func() { httpkeys.ClientIP(httpkeys.WithIPv6Prefix(129)) })
	assert.PanicsWithValue(t, "httpkeys: WithIPv4Prefix(-1): bits must be between 0 and 32",
		func() { httpkeys.ClientIP(httpkeys.WithIPv4Prefix(-1)) })
	assert.PanicsWithValue(t, "httpkeys: Compose needs at least one Func", func() { httpkeys.Compose() })
	assert.PanicsWithValue(t, "httpkeys: Compose: Func 1 is nil", func() { httpkeys.Compose(httpkeys.Method(), nil) })
	assert.PanicsWithValue(t, "httpkeys: Hashed: nil Func", func() { httpkeys.Hashed(nil, nil) })
}
