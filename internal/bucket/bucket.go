// Package bucket owns the scheme of the bucket keys that the middlewares, the rules file, the
// admin endpoint and every other front end ask a limiter for: one function builds them (Name.Key)
// and one reads them (Parse), so that no two places can disagree about where a policy's usage
// lives.
//
// A bucket key is a head, a '|' and the request's key. The head names the policy, the limit of
// the policy and the mode:
//
//	login|ip:192.0.2.1              policy "login", its first limit
//	login#1|ip:192.0.2.1            its second limit, which has KeepUsage
//	login#shadow|ip:192.0.2.1       its first limit in shadow mode
//	login#1#shadow|ip:192.0.2.1     both
//	a##b|ip:192.0.2.1               policy "a#b": a '#' of a name is doubled
//
// The scheme is injective: a policy name has no '|' (the front ends refuse one), so the head
// ends at the first '|'; in the head, "##" is a '#' of the name and a single '#' starts a tag,
// so no name, limit and mode can spell another's head, and no key can reach into the head.
package bucket

import (
	"strconv"
	"strings"
)

// Separator ends a bucket key's head: the rest is the request's key.
const Separator = '|'

// shadowTag marks the head of a bucket decided in shadow mode.
const shadowTag = "#shadow"

// Name is what names a bucket apart from the request's key.
type Name struct {
	// Policy is the name of the policy whose limit the bucket holds. It has no '|'.
	Policy string
	// Limit is the index of the limit among the policy's limits.
	Limit int
	// Keep says that the limit has KeepUsage. A limit without it is one bucket per key and
	// numbers, so its index takes no part in its name; one with it is one bucket per key and
	// algorithm whatever its numbers, so each limit of a policy after the first is named by
	// its index, and a reload that changes their numbers keeps each one's usage with it.
	Keep bool
	// Shadow says that the bucket is decided in shadow mode, apart from enforced buckets.
	Shadow bool
}

// indexed reports whether the head carries the limit's index.
func (n Name) indexed() bool { return n.Keep && n.Limit > 0 }

// HeadLen is the length in bytes of the head of n's bucket keys, with the separator: a
// bucket key is HeadLen() bytes longer than the request's key.
func (n Name) HeadLen() int {
	size := len(n.Policy) + strings.Count(n.Policy, "#") + 1
	if n.indexed() {
		size += 1 + digits(n.Limit)
	}
	if n.Shadow {
		size += len(shadowTag)
	}
	return size
}

// Key returns the bucket key of key under n. It allocates once, and not at all beyond the
// concatenation of the policy and the key for the first limit of an enforced policy whose
// name has no '#'.
func (n Name) Key(key string) string { return n.KeyOfParts(key, "") }

// KeyOfParts returns n.Key(prefix + value) with one allocation: a key function that gives its
// key in two parts (a kind and a value) costs no allocation of its own.
func (n Name) KeyOfParts(prefix, value string) string {
	if !n.indexed() && !n.Shadow && strings.IndexByte(n.Policy, '#') < 0 {
		return n.Policy + "|" + prefix + value
	}
	var b strings.Builder
	b.Grow(n.HeadLen() + len(prefix) + len(value))
	for i := 0; i < len(n.Policy); i++ {
		if n.Policy[i] == '#' {
			b.WriteByte('#')
		}
		b.WriteByte(n.Policy[i])
	}
	if n.indexed() {
		b.WriteByte('#')
		b.WriteString(strconv.Itoa(n.Limit))
	}
	if n.Shadow {
		b.WriteString(shadowTag)
	}
	b.WriteByte(Separator)
	b.WriteString(prefix)
	b.WriteString(value)
	return b.String()
}

// Parse reads a bucket key made by Name.Key: its name, and the request's key. ok is false for a
// string no Name.Key makes. Of the name's limit, only what the head carries comes back: the
// index of a limit with KeepUsage after the first (Keep then true); 0 and false otherwise.
func Parse(bucket string) (n Name, key string, ok bool) {
	head, key, found := strings.Cut(bucket, string(Separator))
	if !found {
		return Name{}, "", false
	}
	var policy strings.Builder
	i := 0
	for ; i < len(head); i++ {
		if head[i] != '#' {
			policy.WriteByte(head[i])
			continue
		}
		if i+1 < len(head) && head[i+1] == '#' {
			policy.WriteByte('#')
			i++
			continue
		}
		break // the first tag
	}
	n.Policy = policy.String()
	tags := head[i:]
	if rest, shadow := strings.CutSuffix(tags, shadowTag); shadow {
		n.Shadow, tags = true, rest
	}
	if tags != "" {
		index, err := strconv.Atoi(tags[1:])
		if err != nil || index < 1 || tags[1] == '+' || tags[1] == '0' {
			return Name{}, "", false
		}
		n.Limit, n.Keep = index, true
	}
	return n, key, true
}

// KeyOf returns the request's key of a bucket key made by Name.Key, and the whole of any other
// string.
func KeyOf(bucket string) string {
	if _, key, ok := strings.Cut(bucket, string(Separator)); ok {
		return key
	}
	return bucket
}

// digits returns the number of decimal digits of n ≥ 0.
func digits(n int) int {
	d := 1
	for n >= 10 {
		n /= 10
		d++
	}
	return d
}
