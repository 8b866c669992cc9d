package rls

import (
	"strings"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// maxTagLen is the longest domain a hash tag holds as it is; a longer one, or one holding
// a brace, is tagged by its digest.
const maxTagLen = 64

// bucketKey returns the key of a descriptor's bucket: the domain, then each entry's key
// and value, or, for an entry that matched a share_threshold pattern, the pattern, which
// every value it matches shares, as the reference service counts. Each is a keypart.Label:
// the domain's label is "d", an entry's is its key after '=' for a value and after '*' for
// a shared pattern, so that a value that spells a pattern is a bucket of its own; the
// labels are joined by keypart.Join, so no two lists of entries give the same key (the
// parts escape what would separate them, and long ones are digests). With tag, the key
// starts with a Redis Cluster hash tag of the domain, "{domain}", which holds no brace: the
// first braces of the key are the tag's, and what follows is the joined key, so the tag
// changes nothing of its injectivity. Keys are at most 512 bytes.
func bucketKey(domain string, entries []*rlv3.RateLimitDescriptor_Entry, shared []string, tag bool) string {
	parts := make([]string, 0, len(entries)+1)
	parts = append(parts, keypart.Label("d", domain))
	for i, e := range entries {
		if shared != nil && shared[i] != "" {
			parts = append(parts, keypart.Label("*"+e.GetKey(), shared[i]))
			continue
		}
		parts = append(parts, keypart.Label("="+e.GetKey(), e.GetValue()))
	}
	key := keypart.Join(parts)
	if !tag {
		return key
	}
	t := hashTag(domain)
	if len(t)+len(key) > args.MaxKeyLen {
		key = keypart.Hash(nil, key)
	}
	return t + key
}

// hashTag returns the hash tag of a domain's keys: the domain in braces, or its digest
// for a long one or one that holds a brace.
func hashTag(domain string) string {
	if len(domain) > maxTagLen || strings.ContainsAny(domain, "{}") || domain == "" {
		domain = keypart.Hash(nil, domain)
	}
	return "{" + domain + "}"
}
