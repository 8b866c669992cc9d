package bucket_test

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/bucket"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct {
		name bucket.Name
		key  string
		want string
	}{
		{bucket.Name{Policy: "login"}, "ip:192.0.2.1", "login|ip:192.0.2.1"},
		// no KeepUsage: the numbers tell limits apart
		{bucket.Name{Policy: "login", Limit: 1}, "k", "login|k"},
		{bucket.Name{Policy: "login", Limit: 1, Keep: true}, "k", "login#1|k"},
		{bucket.Name{Policy: "login", Keep: true}, "k", "login|k"},
		{bucket.Name{Policy: "login", Shadow: true}, "k", "login#shadow|k"},
		{bucket.Name{Policy: "login", Limit: 12, Keep: true, Shadow: true}, "k", "login#12#shadow|k"},
		{bucket.Name{Policy: "a#b"}, "k", "a##b|k"},
		{bucket.Name{Policy: "POST /login"}, "u|1", "POST /login|u|1"},
		{bucket.Name{Policy: ""}, "k", "|k"},
	} {
		got := tc.name.Key(tc.key)
		assert.Equal(t, tc.want, got, "%+v", tc.name)
		assert.Equal(t, len(got), tc.name.HeadLen()+len(tc.key), "HeadLen of %+v", tc.name)
		assert.Equal(t, got, tc.name.KeyOfParts(tc.key[:len(tc.key)/2], tc.key[len(tc.key)/2:]))
		assert.Equal(t, tc.key, bucket.KeyOf(got))
	}
}

// The collisions of the scheme before it had one owner: each pair named one bucket.
func TestKeyAdversarialPairs(t *testing.T) {
	for _, tc := range []struct {
		a, b       bucket.Name
		keyA, keyB string
	}{
		// A policy named "shadow" and another policy's shadow bucket.
		{bucket.Name{Policy: "shadow"}, bucket.Name{Policy: "login", Shadow: true}, "login|victim", "victim"},
		// A policy whose name looks like another's limit index.
		{bucket.Name{Policy: "login#1"}, bucket.Name{Policy: "login", Limit: 1, Keep: true}, "k", "k"},
		// A policy whose name looks like another's shadow tag.
		{bucket.Name{Policy: "login#shadow"}, bucket.Name{Policy: "login", Shadow: true}, "k", "k"},
		{bucket.Name{Policy: "login#1#shadow"}, bucket.Name{Policy: "login", Limit: 1, Keep: true, Shadow: true}, "k", "k"},
		// A '#' at the end of a name, before a tag.
		{bucket.Name{Policy: "a#", Limit: 1, Keep: true}, bucket.Name{Policy: "a", Limit: 1, Keep: true}, "k", "#k"},
		// A key that carries a head.
		{bucket.Name{Policy: "a"}, bucket.Name{Policy: "a", Shadow: true}, "#shadow|k", "k"},
	} {
		assert.NotEqual(t, tc.a.Key(tc.keyA), tc.b.Key(tc.keyB), "%+v %q and %+v %q", tc.a, tc.keyA, tc.b, tc.keyB)
	}
}

// Parse is a left inverse of Key, so Key is injective: no two (name, key) pairs, however
// adversarial, name one bucket. Names and keys are drawn from the characters the scheme
// gives a meaning to.
func TestKeyInjective(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(alphabet string, n int) string {
		var b strings.Builder
		for range rng.IntN(n + 1) {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	seen := map[string]string{}
	for range 200_000 {
		n := bucket.Name{
			Policy: word("#s1ah0", 8),
			Limit:  rng.IntN(12),
			Keep:   rng.IntN(2) == 0,
			Shadow: rng.IntN(2) == 0,
		}
		key := word("#|s1h", 6)
		got := n.Key(key)
		parsed, parsedKey, ok := bucket.Parse(got)
		require.True(t, ok, "Parse(%q)", got)
		want := n
		if !n.Keep || n.Limit == 0 { // the index takes no part in the name
			want.Limit, want.Keep = 0, false
		}
		require.Equal(t, want, parsed, "Parse(%q)", got)
		require.Equal(t, key, parsedKey, "Parse(%q)", got)
		id := strings.Join([]string{want.Policy, string(rune('0' + want.Limit)), boolText(want.Shadow), key}, "\x00")
		if prev, dup := seen[got]; dup {
			require.Equal(t, prev, id, "two names give %q", got)
		}
		seen[got] = id
	}
}

func boolText(b bool) string {
	if b {
		return "t"
	}
	return "f"
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"no separator", "a#|k", "a#x|k", "a#0|k", "a#01|k", "a#-1|k", "a#+1|k", "a#shadow#1|k"} {
		_, _, ok := bucket.Parse(s)
		assert.False(t, ok, "Parse(%q)", s)
	}
}

func TestKeyAllocations(t *testing.T) {
	n := bucket.Name{Policy: "login"}
	var sink string
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { sink = n.KeyOfParts("ip:", "192.0.2.1") }))
	n.Shadow = true
	assert.Equal(t, 1.0, testing.AllocsPerRun(100, func() { sink = n.KeyOfParts("ip:", "192.0.2.1") }))
	_ = sink
}
