// Package keypart builds the labelled parts of rate-limit keys ("user:42", "route:/v1/x")
// and joins them, for keyfuncs (Gin) and keyfuncs/grpckeys (gRPC). It uses only the standard
// library.
package keypart

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// MaxValueLen is the longest value Label keeps as it is. A longer one, which a client can
// send in a header or metadata entry to bloat every bucket it creates, is replaced by a
// digest of fixed length.
const MaxValueLen = 128

// Label returns label + ":" + value, with a value longer than MaxValueLen replaced by
// "sha256:" and the hex of the first 16 bytes of its SHA-256.
func Label(label, value string) string {
	if len(value) > MaxValueLen {
		sum := sha256.Sum256([]byte(value))
		value = "sha256:" + hex.EncodeToString(sum[:16])
	}
	return label + ":" + value
}

// Join joins parts with "|", escaping "%" as "%25" and "|" as "%7C" inside each part so that
// a value holding a "|" cannot make two different lists of parts join to the same key.
func Join(parts []string) string {
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteByte('|')
		}
		if strings.ContainsAny(p, "%|") {
			p = strings.NewReplacer("%", "%25", "|", "%7C").Replace(p)
		}
		b.WriteString(p)
	}
	return b.String()
}

// Hash returns "h:" followed by the unpadded base64url of the first 16 bytes of
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
	return "h:" + base64.RawURLEncoding.EncodeToString(sum[:16])
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
// expect one) into an error: a key function must not take the request down.
func stringOf(s fmt.Stringer) (str string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("String method of %T panicked: %v", s, r)
		}
	}()
	return s.String(), nil
}
