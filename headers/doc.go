// Package headers builds the response header fields that tell a client about a rate-limit
// decision: Retry-After, the de facto X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset, and the RateLimit-Policy and RateLimit fields of the IETF draft
// draft-ietf-httpapi-ratelimit-headers-11.
//
// Every function is pure: it takes a ratelimit.Result and returns strings, so the same code
// serves HTTP responses (Set writes an http.Header) and gRPC metadata (Fields returns
// name/value pairs to copy into a header or trailer). The guide docs/headers.md says what
// each field means to a client and which Style to choose.
//
// # Styles
//
// A Style picks the fields: StyleXRateLimit (the default: what most clients and API
// gateways read today), StyleIETF (the draft's two structured fields), StyleBoth, or
// StyleNone. Whatever the style, a denial carries Retry-After (RFC 9110, section 10.2.3),
// since the 429 status code alone does not say when to come back.
//
// # Times are delta seconds
//
// Every time is a number of whole seconds from now, rounded up: Retry-After,
// X-RateLimit-Reset and the draft's t parameter. Seconds from now need no agreement between
// the client's clock and ours, and the Redis backend decides on the Redis server's clock,
// which the application server's clock need not match, so an absolute Unix time could be
// wrong by the skew between them. Rounding up means a client that waits the advertised time
// is never early.
//
// # Security
//
// These fields tell every client its remaining quota and the limit. That is their purpose,
// but a limit that reveals capacity (a limit per backend shard, say) should use StyleNone;
// Retry-After is still sent on denials.
package headers
