package rls

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/internal/args"
)

// TestBucketKeyInjective builds the keys of adversarial descriptors, whose keys and values
// hold the separators and escapes of the scheme, and checks that no two differ in input
// and share a key.
func TestBucketKeyInjective(t *testing.T) {
	pieces := []string{"", "a", "b", "a|b", "a:b", "=a", "*a", "%7C", "%", "#x", "h:#x", "d:x",
		"{t}", "}", "{", "a*", strings.Repeat("z", 130), strings.Repeat("y", 600)}
	type input struct {
		domain string
		kv     []string
		shared []string
	}
	var inputs []input
	for _, d := range []string{"d", "a|b", "{t}", strings.Repeat("q", 70)} {
		for _, k := range pieces[1:6] {
			for _, v := range pieces {
				inputs = append(inputs, input{d, []string{k, v}, nil}, input{d, []string{k, v, v, k}, nil},
					input{d, []string{k, v, v, k}, []string{"", k}})
				if v != "" { // an empty shared pattern is no pattern
					inputs = append(inputs, input{d, []string{k, v}, []string{v}})
				}
			}
		}
	}
	for _, tag := range []bool{false, true} {
		seen := make(map[string]string, len(inputs))
		for _, in := range inputs {
			key := bucketKey(in.domain, entries(in.kv...), in.shared, tag)
			name := fmt.Sprintf("%q %q %q", in.domain, in.kv, in.shared)
			if other, dup := seen[key]; dup && other != name {
				t.Fatalf("%s and %s share the key %q", other, name, key)
			}
			seen[key] = name
			assert.LessOrEqual(t, len(key), args.MaxKeyLen, name)
			if tag {
				assert.True(t, strings.HasPrefix(key, hashTag(in.domain)), name)
				assert.NotContains(t, hashTag(in.domain)[1:len(hashTag(in.domain))-1], "{")
			}
		}
	}
	assert.Equal(t, "{shop}d:shop|=route:/cart", bucketKey("shop", entries("route", "/cart"), nil, true))
	assert.Equal(t, "d:shop|*file:logs/*", bucketKey("shop", entries("file", "logs/a"), []string{"logs/*"}, false))
}
