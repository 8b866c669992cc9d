// Package keypart builds rate-limit keys for keyfuncs (Gin), keyfuncs/httpkeys (net/http)
// and keyfuncs/grpckeys (gRPC): labelled parts ("user:42"), digests of long values, hashed
// keys, and lists of parts ("user:42|route:/v1/x").
//
// # Grammar
//
// Different inputs never give the same key, short of a SHA-256 collision, because every key
// can be read back:
//
//	Label  label ":" value                        user:42
//	       label ":#sha256:" 32 hex digits        x-api-key:#sha256:… (a value over MaxValueLen)
//	Hash   "h:#" 22 base64url characters          h:#avoJEoIKCspjgRPYJH1IFA
//	Join   part "|" part …                        user:42|route:/v1/x
//
// A label has '%', ':' and '|' escaped (as %25, %3A, %7C), so it ends at the key's first
// ':'. A value has '%', '|' and '#' escaped (%23 for '#'), so a value starting with '#' is a
// digest, never a literal: a client who sends the text of a digest gets a key of its own.
// Hash's "h:#" is the digest form of the label "h", told apart from Label("h", long value)
// by the "sha256:" the latter carries and the former cannot (base64url has no ':'). No Label
// or Hash holds a '|', so the '|'s of a Join are its own; Join escapes '%' and '|' in each
// part once more, so that a Join of Joins reads back as the tree it is. A Join of a single
// part is the part, since it names the same thing.
//
// Every key is at most args.MaxKeyLen bytes: Label and Join replace a longer result by
// Hash(nil, result), which is short and, being a digest of all of it, still tells keys apart.
package keypart

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/sluice-go/ratelimit/internal/args"
)

// MaxValueLen is the longest value Label keeps as it is. A longer one, which a client can
// send in a header or metadata entry to bloat every bucket it creates, is replaced by a
// digest of fixed length.
const MaxValueLen = 128

// The bytes escaped as %XX: in labels, so that a label ends at the first ':' and never
// holds Join's separator; in values, so that '#' starts only digests and '|' only separates
// parts; in the parts of a Join, so that Joins nest. '%' is always escaped, so that escaping
// can be undone.
const (
	labelSpecial = "%:|"
	valueSpecial = "%|#"
	partSpecial  = "%|"
)

// Label returns label + ":" + value with both escaped (see the package documentation), or,
// for a value longer than MaxValueLen, label + ":#sha256:" and the hex of the first 16 bytes
// of the value's SHA-256. A result longer than args.MaxKeyLen (a label hundreds of bytes
// long) is replaced by Hash(nil, result).
func Label(label, value string) string {
	return bound(labelled(label, value))
}

// Plain reports whether Label(label, value) is label + ":" + value: nothing to escape in
// either, value no longer than MaxValueLen, the key within args.MaxKeyLen. A caller
// that knows label + ":" need not build the key to know its parts.
func Plain(label, value string) bool {
	return len(value) <= MaxValueLen && len(label)+1+len(value) <= args.MaxKeyLen &&
		!strings.ContainsAny(label, labelSpecial) && !strings.ContainsAny(value, valueSpecial)
}

// labelled is Label without the bound on the length.
func labelled(label, value string) string {
	if len(value) > MaxValueLen {
		sum := sha256.Sum256([]byte(value))
		return escape(label, labelSpecial) + ":#sha256:" + hex.EncodeToString(sum[:16])
	}
	return escape(label, labelSpecial) + ":" + escape(value, valueSpecial)
}

// Join joins parts with "|", escaping "%" as "%25" and "|" as "%7C" inside each part, so
// that no two different lists of parts join to the same key. A single part is returned as it
// is (bounded, like every key), so Join([]string{k}) names what k names. A result longer
// than args.MaxKeyLen is replaced by Hash(nil, result).
func Join(parts []string) string {
	if len(parts) == 1 {
		return bound(parts[0])
	}
	return bound(joined(parts))
}

// joined is Join of two or more parts without the bound on the length.
func joined(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('|')
		}
		b.WriteString(escape(p, partSpecial))
	}
	return b.String()
}

// Hash returns "h:#" followed by the unpadded base64url of the first 16 bytes of
// HMAC-SHA256(secret, key), or of SHA-256(key) when secret is empty.
func Hash(secret []byte, key string) string {
	var sum []byte
	if len(secret) == 0 {
		s := sha256.Sum256([]byte(key))
		sum = s[:]
	} else {
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(key))
		sum = m.Sum(nil)
	}
	return "h:#" + base64.RawURLEncoding.EncodeToString(sum[:16])
}

// bound returns key, or Hash(nil, key) when key is longer than args.MaxKeyLen.
func bound(key string) string {
	if len(key) > args.MaxKeyLen {
		return Hash(nil, key)
	}
	return key
}

// escape returns s with '%' and every byte of special written as '%' and two upper-case hex
// digits; special must include '%'.
func escape(s, special string) string {
	if !strings.ContainsAny(s, special) {
		return s
	}
	const digits = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(special, c) < 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&0xf])
	}
	return b.String()
}

// Value formats a value found in a request context: strings as they are, integers in
// decimal, fmt.Stringers by their String method. Any other type is refused, because
// formatting it with %v could give a different key for the same client on every request
// (a pointer prints its address).
func Value(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int:
		return strconv.FormatInt(int64(v), 10), nil
	case int8:
		return strconv.FormatInt(int64(v), 10), nil
	case int16:
		return strconv.FormatInt(int64(v), 10), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(v), 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case fmt.Stringer:
		return stringOf(v)
	}
	return "", fmt.Errorf("value of type %T cannot be a key: use a string, an integer or a fmt.Stringer", v)
}

// stringOf calls s.String, turning a panic (a nil pointer whose String method does not
// expect one) into an error: a key function must not take the request down. The panic's
// value is not reported, since it may hold the value being formatted.
func stringOf(s fmt.Stringer) (str string, err error) {
	defer func() {
		if recover() != nil {
			err = fmt.Errorf("String method of %T panicked", s)
		}
	}()
	return s.String(), nil
}
