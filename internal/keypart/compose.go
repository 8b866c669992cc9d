package keypart

import (
	"fmt"
	"slices"

	"github.com/sluice-go/ratelimit/internal/args"
)

// Compose returns a function that calls each of fs with its argument and joins their keys
// with Join, in order. It fails with the first error, and with an error wrapping
// ratelimit.ErrInvalidArgument when a part returns an empty key with no error. It panics, naming
// pkg (the calling package), if fs is empty or holds nil.
//
// The key functions of Gin and net/http take one argument and use Compose directly; gRPC's
// take two, and pass them as one struct.
func Compose[A any, F ~func(A) (string, error)](pkg string, fs []F) func(A) (string, error) {
	if len(fs) == 0 {
		panic(pkg + ": Compose needs at least one Func")
	}
	for i, f := range fs {
		if f == nil {
			panic(fmt.Sprintf("%s: Compose: Func %d is nil", pkg, i))
		}
	}
	fs = slices.Clone(fs) // a caller reusing its slice must not change the keys
	return func(a A) (string, error) {
		parts := make([]string, len(fs))
		for i, f := range fs {
			p, err := f(a)
			if err != nil {
				return "", err
			}
			if p == "" {
				return "", fmt.Errorf("%w: part %d of Compose is empty", args.ErrKeyEmpty, i)
			}
			parts[i] = p
		}
		return Join(parts), nil
	}
}

// Hashed returns a function that replaces the key of f by Hash(secret, key). It fails when f
// fails, and with an error wrapping ratelimit.ErrInvalidArgument when f returns an empty key with
// no error. It panics, naming pkg, if f is nil.
func Hashed[A any, F ~func(A) (string, error)](pkg string, secret []byte, f F) func(A) (string, error) {
	if f == nil {
		panic(pkg + ": Hashed: nil Func")
	}
	secret = slices.Clone(secret)
	return func(a A) (string, error) {
		key, err := f(a)
		if err != nil {
			return "", err
		}
		if key == "" {
			return "", fmt.Errorf("%w: the Func given to Hashed returned an empty key", args.ErrKeyEmpty)
		}
		return Hash(secret, key), nil
	}
}

// ContextValue returns Label(label, s) for the string form s of v (see Value), v being the
// value a request context holds for a key. It fails with an error wrapping
// ratelimit.ErrInvalidArgument when v is nil, of a type Value refuses, or empty; what names the
// value in these errors ("gin context value \"user\"") and must not hold the value itself.
func ContextValue(label string, v any, what string) (string, error) {
	if v == nil {
		return "", fmt.Errorf("%w: %s is missing", args.ErrKeyEmpty, what)
	}
	s, err := Value(v)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", args.ErrKeyEmpty, what, err)
	}
	if s == "" {
		return "", fmt.Errorf("%w: %s is empty", args.ErrKeyEmpty, what)
	}
	return Label(label, s), nil
}
