package keypart

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/args"
)

// The proof that keys are injective. read parses a key back, following the grammar of the
// package documentation, into a description of what it was made of:
//
//	L("label","value")  a literal value under a label
//	D("label",hex)      a long value under a label, by the hex of its SHA-256
//	H(base64)           a Hash, or a key too long to keep, by its digest
//	J(part,part,…)      a Join of two or more parts
//
// FuzzKeys builds keys from Label, Join and Hash, and computes the same description from the
// inputs (describe). When read(key) equals the description for every input, two inputs with
// the same key have the same description: the same labels and values, or values whose
// SHA-256 digests are equal. That is injectivity, short of a SHA-256 collision.

// read returns the description of key, or ok == false when the grammar cannot produce key.
func read(key string) (string, bool) {
	if strings.Contains(key, "|") {
		var descs []string
		for _, p := range strings.Split(key, "|") {
			part, ok := unescape(p, partSpecial)
			if !ok {
				return "", false
			}
			d, ok := read(part)
			if !ok {
				return "", false
			}
			descs = append(descs, d)
		}
		return "J(" + strings.Join(descs, ",") + ")", true
	}
	rawLabel, rest, ok := strings.Cut(key, ":")
	if !ok {
		return "", false
	}
	label, ok := unescape(rawLabel, labelSpecial)
	if !ok {
		return "", false
	}
	if d, isDigest := strings.CutPrefix(rest, "#sha256:"); isDigest {
		if _, err := hex.DecodeString(d); err != nil || len(d) != 32 {
			return "", false
		}
		return "D(" + strconv.Quote(label) + "," + d + ")", true
	}
	if d, isHash := strings.CutPrefix(rest, "#"); isHash {
		if b, err := base64.RawURLEncoding.DecodeString(d); err != nil || len(b) != 16 || rawLabel != "h" {
			return "", false
		}
		return "H(" + d + ")", true
	}
	value, ok := unescape(rest, valueSpecial)
	if !ok {
		return "", false
	}
	return "L(" + strconv.Quote(label) + "," + strconv.Quote(value) + ")", true
}

// unescape undoes escape(·, special), reporting false for a string escape cannot produce: a
// raw byte of special, or a '%' not followed by the escape of one.
func unescape(s, special string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if strings.IndexByte(special, c) >= 0 {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil || strings.IndexByte(special, byte(v)) < 0 || s[i+1:i+3] != strings.ToUpper(s[i+1:i+3]) {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

// digest returns the base64url of the first 16 bytes of HMAC-SHA256(secret, s), or of
// SHA-256(s) for an empty secret: what a Hash carries after "h:#".
func digest(secret []byte, s string) string {
	var sum []byte
	if len(secret) == 0 {
		x := sha256.Sum256([]byte(s))
		sum = x[:]
	} else {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(s))
		sum = m.Sum(nil)
	}
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// built is a key and the description of what it was built from.
type built struct{ key, desc string }

func label(l, v string) built {
	desc := "L(" + strconv.Quote(l) + "," + strconv.Quote(v) + ")"
	if len(v) > MaxValueLen {
		sum := sha256.Sum256([]byte(v))
		desc = "D(" + strconv.Quote(l) + "," + hex.EncodeToString(sum[:16]) + ")"
	}
	if s := labelled(l, v); len(s) > args.MaxKeyLen {
		desc = "H(" + digest(nil, s) + ")"
	}
	return built{Label(l, v), desc}
}

func join(parts []built) built {
	if len(parts) == 1 {
		return built{Join([]string{parts[0].key}), parts[0].desc}
	}
	keys, descs := make([]string, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		keys[i], descs[i] = p.key, p.desc
	}
	desc := "J(" + strings.Join(descs, ",") + ")"
	if s := joined(keys); len(s) > args.MaxKeyLen {
		desc = "H(" + digest(nil, s) + ")"
	}
	return built{Join(keys), desc}
}

func hash(secret []byte, p built) built {
	return built{Hash(secret, p.key), "H(" + digest(secret, p.key) + ")"}
}

// build runs prog, a program for a stack machine whose values are keys, over pool, the
// strings labels and values are taken from. Each byte is an operation (its low two bits)
// and an argument (the rest): 0 pushes Label(pool[arg], pool[arg+1]) (indices modulo the
// pool's size); 1 joins the top arg%3+1 keys; 2 hashes the top key, with no secret or with
// "k"; 3 joins the top two. What remains at the end is joined. ok is false when nothing does.
func build(prog []byte, pool []string) (b built, ok bool) {
	var stack []built
	top := func(n int) []built {
		n = min(n, len(stack))
		parts := stack[len(stack)-n:]
		stack = stack[:len(stack)-n]
		return parts
	}
	for _, op := range prog {
		arg := int(op >> 2)
		switch op & 3 {
		case 0:
			stack = append(stack, label(pool[arg%len(pool)], pool[(arg+1)%len(pool)]))
		case 1, 3:
			n := 2
			if op&3 == 1 {
				n = arg%3 + 1
			}
			if parts := top(n); len(parts) > 0 {
				stack = append(stack, join(parts))
			}
		case 2:
			if len(stack) > 0 {
				secret := []byte(nil)
				if arg%2 == 1 {
					secret = []byte("k")
				}
				stack = append(stack, hash(secret, top(1)[0]))
			}
		}
	}
	if len(stack) == 0 {
		return built{}, false
	}
	return join(top(len(stack))), true
}

// FuzzKeys checks, for two keys built by two programs over one pool of strings, that each
// reads back as the description of what it was built from, that none is longer than
// MaxKeyLen, and that the keys are equal exactly when the descriptions are. The seeds run in
// every plain go test; go test -fuzz=FuzzKeys searches further.
func FuzzKeys(f *testing.F) {
	const (
		lab0  = 0      // Label(pool[0], pool[1])
		lab1  = 1 << 2 // Label(pool[1], pool[2])
		lab2  = 2 << 2 // Label(pool[2], pool[3])
		join2 = 3      // Join of the top two
		join1 = 1      // Join of the top one
		hashN = 2      // Hash with no secret
		hashK = 6      // Hash with the secret "k"
	)
	long := strings.Repeat("k", MaxValueLen+1)
	// The defect: a literal value that is the text of a long value's digest.
	f.Add([]byte{lab0}, []byte{lab2}, "x-api-key\x00"+long+"\x00x-api-key\x00#sha256:9094034fb2d0ce2e407c9b260f2806ab")
	f.Add([]byte{lab0}, []byte{lab2}, "x-api-key\x00"+long+"\x00x-api-key\x00sha256:9094034fb2d0ce2e407c9b260f2806ab")
	// A literal value that is the text of a Hash, under the label Hash uses.
	f.Add([]byte{lab0, hashK}, []byte{lab2}, "ip\x00192.0.2.1\x00h\x00#avoJEoIKCspjgRPYJH1IFA")
	// A value holding the separator, against two parts.
	f.Add([]byte{lab0}, []byte{lab2, 4 << 2, join2}, "a\x00b|c:d\x00a\x00b\x00c\x00d")
	// Where a label ends.
	f.Add([]byte{lab0}, []byte{lab2}, "a:b\x00c\x00a\x00b:c")
	// Nested and flat Joins; a Join of one part.
	f.Add([]byte{lab0, lab1, join2, lab2, join2}, []byte{lab0, lab1, lab2, join1 | 2<<2}, "a\x00b\x00c\x00d")
	f.Add([]byte{lab0, join1}, []byte{lab0}, "t\x00a|b%")
	// Escapes that look like escapes.
	f.Add([]byte{lab0}, []byte{lab2}, "t\x00a%7Cb\x00t\x00a|b")
	// Joins and labels past MaxKeyLen, against their own hashes.
	f.Add([]byte{lab0, lab0, lab0, lab0, lab0}, []byte{lab0, lab0, lab0, lab0, join2, join2, join2, join2, hashN},
		strings.Repeat("l", 100)+"\x00"+strings.Repeat("v", 120))
	f.Add([]byte{lab0}, []byte{lab0, hashN}, strings.Repeat("l", 600)+"\x00v")
	f.Fuzz(func(t *testing.T, prog1, prog2 []byte, pool string) {
		strs := strings.Split(pool, "\x00")
		b1, ok1 := build(prog1, strs)
		b2, ok2 := build(prog2, strs)
		if !ok1 || !ok2 {
			return
		}
		for _, b := range []built{b1, b2} {
			require.LessOrEqual(t, len(b.key), args.MaxKeyLen, b.key)
			desc, ok := read(b.key)
			require.True(t, ok, "%q does not read back", b.key)
			require.Equal(t, b.desc, desc, "key %q", b.key)
		}
		require.Equal(t, b1.desc == b2.desc, b1.key == b2.key, "%q from %s and %s", b1.key, b1.desc, b2.desc)
	})
}

// FuzzLabel checks that every label and value read back from their key.
func FuzzLabel(f *testing.F) {
	f.Add("x-api-key", "abc")
	f.Add("a:b|c%", "#sha256:|%7C%")
	f.Add("h", "#avoJEoIKCspjgRPYJH1IFA")
	f.Add("", "")
	f.Add("x-api-key", strings.Repeat("%|", MaxValueLen))
	f.Fuzz(func(t *testing.T, l, v string) {
		b := label(l, v)
		desc, ok := read(b.key)
		require.True(t, ok, "%q does not read back", b.key)
		require.Equal(t, b.desc, desc)
	})
}
