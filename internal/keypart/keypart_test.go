package keypart

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLabel(t *testing.T) {
	assert.Equal(t, "user:42", Label("user", "42"))
	long := Label("x-api-key", strings.Repeat("k", MaxValueLen+1))
	assert.Equal(t, "x-api-key:sha256:", long[:len("x-api-key:sha256:")])
	assert.Len(t, long, len("x-api-key:sha256:")+32) // 16 bytes in hex
	assert.Equal(t, MaxValueLen+2, len(Label("a", strings.Repeat("k", MaxValueLen))), "at the cap: kept")
}

func TestJoin(t *testing.T) {
	assert.Equal(t, "user:42|route:/v1/x", Join([]string{"user:42", "route:/v1/x"}))
	// Without escaping, both of these would be "a:1|b:2|c:3".
	assert.Equal(t, "a:1%7Cb:2|c:3", Join([]string{"a:1|b:2", "c:3"}))
	assert.Equal(t, "a:1|b:2%7Cc:3", Join([]string{"a:1", "b:2|c:3"}))
	assert.Equal(t, "a:100%25", Join([]string{"a:100%"}))
}

func TestHash(t *testing.T) {
	plain, keyed := Hash(nil, "ip:192.0.2.1"), Hash([]byte("secret"), "ip:192.0.2.1")
	assert.Len(t, plain, 2+22) // "h:" + 16 bytes in unpadded base64
	assert.NotEqual(t, plain, keyed)
	assert.Equal(t, keyed, Hash([]byte("secret"), "ip:192.0.2.1"), "deterministic")
	assert.NotEqual(t, keyed, Hash([]byte("other"), "ip:192.0.2.1"))
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
}
