package keypart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

func TestLabel(t *testing.T) {
	long := strings.Repeat("k", MaxValueLen+1)
	// sha256("k" × 129)[:16] in hex, checked with Python's hashlib:
	// 9094034fb2d0ce2e407c9b260f2806ab.
	const digest = "x-api-key:#sha256:9094034fb2d0ce2e407c9b260f2806ab"
	tests := []struct {
		name, label, value, want string
	}{
		{"plain", "user", "42", "user:42"},
		{"colons in a value stay", "ip", "2001:db8::1", "ip:2001:db8::1"},
		{"long value digested", "x-api-key", long, digest},
		{"at the cap: kept", "a", strings.Repeat("k", MaxValueLen), "a:" + strings.Repeat("k", MaxValueLen)},
		// The defect this grammar mends: a client sending the digest's text as its header
		// value. '#' is escaped in every literal value, so it gets a bucket of its own.
		{"digest text as a value", "x-api-key", "#sha256:9094034fb2d0ce2e407c9b260f2806ab",
			"x-api-key:%23sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		// The digest's text as it used to be (without '#') is an ordinary value.
		{"old digest text as a value", "x-api-key", "sha256:9094034fb2d0ce2e407c9b260f2806ab",
			"x-api-key:sha256:9094034fb2d0ce2e407c9b260f2806ab"},
		// Unescaped, ("a:b", "c") and ("a", "b:c") would both be "a:b:c".
		{"colon in a label", "a:b", "c", "a%3Ab:c"},
		{"colon in a value", "a", "b:c", "a:b:c"},
		// A '|' in a value would otherwise pass for Join's separator.
		{"separator and escape in a value", "t", "a|b%#", "t:a%7Cb%25%23"},
		{"separator in a label", "a|b", "c", "a%7Cb:c"},
		// The text of a Hash under the label "h" is a literal like any other.
		{"hash text as a value", "h", "#avoJEoIKCspjgRPYJH1IFA", "h:%23avoJEoIKCspjgRPYJH1IFA"},
		// "l" × 600 + ":v" is 602 bytes, more than MaxKeyLen: replaced by its SHA-256,
		// 5D8JKj8vaqFug2N1n5u7Bg in base64url (Python's hashlib).
		{"longer than MaxKeyLen", strings.Repeat("l", 600), "v", "h:#5D8JKj8vaqFug2N1n5u7Bg"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Label(tt.label, tt.value))
		})
	}
}

func TestJoin(t *testing.T) {
	assert.Equal(t, "user:42|route:/v1/x", Join([]string{"user:42", "route:/v1/x"}))
	// Without escaping, both of these would be "a:1|b:2|c:3".
	assert.Equal(t, "a:1%7Cb:2|c:3", Join([]string{"a:1|b:2", "c:3"}))
	assert.Equal(t, "a:1|b:2%7Cc:3", Join([]string{"a:1", "b:2|c:3"}))
	// A Label's own escapes are escaped again, so the part reads back as it was.
	assert.Equal(t, "x-tenant:a%257Cb|method:GET", Join([]string{Label("x-tenant", "a|b"), "method:GET"}))
	// One part is the part itself: Compose(f) keys as f does.
	assert.Equal(t, "t:a%7Cb", Join([]string{Label("t", "a|b")}))

	// Five parts joined take 524 bytes, more than MaxKeyLen: the key is their SHA-256,
	// OlJEUVyHftL4dzZRWcdj4A in base64url (Python's hashlib over the joined text).
	parts := []string{"user:" + strings.Repeat("u", 120), "x-api-key:" + strings.Repeat("a", 120),
		"route:/" + strings.Repeat("r", 120), "method:GET", "pattern:" + strings.Repeat("p", 120)}
	require.Len(t, strings.Join(parts, "|"), 524)
	assert.Equal(t, "h:#OlJEUVyHftL4dzZRWcdj4A", Join(parts))
}

func TestHash(t *testing.T) {
	// base64url(SHA-256("ip:192.0.2.1")[:16]) and base64url(HMAC-SHA256("k", "ip:192.0.2.1")[:16]),
	// computed with Python's hashlib and hmac.
	assert.Equal(t, "h:#T6eUI-8vx94X7n0m4zc7HQ", Hash(nil, "ip:192.0.2.1"))
	assert.Equal(t, "h:#avoJEoIKCspjgRPYJH1IFA", Hash([]byte("k"), "ip:192.0.2.1"))
	assert.NotEqual(t, Hash([]byte("k"), "ip:192.0.2.1"), Hash([]byte("other"), "ip:192.0.2.1"))
}

type id struct{ n int }

func (i *id) String() string { return "id-" + string(rune('0'+i.n)) }

func TestValue(t *testing.T) {
	for _, tt := range []struct {
		in   any
		want string
	}{{"alice", "alice"}, {42, "42"}, {int64(-7), "-7"}, {uint8(255), "255"}, {&id{3}, "id-3"}} {
		got, err := Value(tt.in)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got)
	}
	for _, in := range []any{nil, 1.5, struct{}{}, []byte("x"), (*id)(nil)} {
		_, err := Value(in)
		assert.Error(t, err, "%T", in)
	}
	_, err := Value((*id)(nil))
	assert.EqualError(t, err, "String method of *keypart.id panicked")
}

func TestContextValue(t *testing.T) {
	got, err := ContextValue("user", 42, `context value "user"`)
	require.NoError(t, err)
	assert.Equal(t, "user:42", got)
	for _, tt := range []struct {
		in   any
		want string
	}{
		{nil, `ratelimit: empty key: context value "user" is missing`},
		{"", `ratelimit: empty key: context value "user" is empty`},
		{1.5, `ratelimit: empty key: context value "user": value of type float64 cannot be a key: use a string, an integer or a fmt.Stringer`},
	} {
		_, err := ContextValue("user", tt.in, `context value "user"`)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		assert.EqualError(t, err, tt.want)
	}
}

func TestCompose(t *testing.T) {
	type fn func(string) (string, error)
	label := func(l string) fn { return func(v string) (string, error) { return Label(l, v), nil } }
	empty := fn(func(string) (string, error) { return "", nil })

	got, err := Compose("p", []fn{label("a"), label("b")})("x|y")
	require.NoError(t, err)
	assert.Equal(t, "a:x%257Cy|b:x%257Cy", got) // each part "a:x%7Cy", escaped once more by Join

	_, err = Compose("p", []fn{label("a"), empty})("x")
	assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.EqualError(t, err, "ratelimit: empty key: part 1 of Compose is empty")

	got, err = Hashed("p", []byte("k"), fn(func(string) (string, error) { return "ip:192.0.2.1", nil }))("")
	require.NoError(t, err)
	assert.Equal(t, "h:#avoJEoIKCspjgRPYJH1IFA", got) // as in TestHash
	_, err = Hashed("p", nil, empty)("")
	assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)

	// The caller's slice is copied: changing it later changes nothing.
	fs := []fn{label("a")}
	f := Compose("p", fs)
	fs[0] = label("z")
	got, _ = f("1")
	assert.Equal(t, "a:1", got)

	assert.PanicsWithValue(t, "p: Compose needs at least one Func", func() { Compose[string, fn]("p", nil) })
	assert.PanicsWithValue(t, "p: Compose: Func 1 is nil", func() { Compose("p", []fn{label("a"), nil}) })
	assert.PanicsWithValue(t, "p: Hashed: nil Func", func() { Hashed[string, fn]("p", nil, nil) })
}

// TestPlain: Plain says exactly when Label leaves its label and value as they are.
func TestPlain(t *testing.T) {
	long := strings.Repeat("v", MaxValueLen)
	for _, c := range []struct{ label, value string }{
		{"rpc", "/pkg.Svc/Get"}, {"x-user", "alice"}, {"ip", "192.0.2.1"},
		{"rpc", "/pkg.Svc/Get|x"}, {"rpc", "#sha256:00"}, {"rpc", "100%"}, {"a:b", "v"},
		{"x", long}, {"x", long + "v"}, {strings.Repeat("l", 400), long},
	} {
		assert.Equal(t, Label(c.label, c.value) == c.label+":"+c.value, Plain(c.label, c.value), "%q %q", c.label, c.value)
	}
}
