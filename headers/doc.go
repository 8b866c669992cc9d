// Package headers builds the response header fields that tell a client about a rate-limit
// decision: Retry-After, the de facto X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset, and the RateLimit-Policy and RateLimit fields of the IETF draft
// draft-ietf-httpapi-ratelimit-headers-11.
//
// Every function is pure: it takes a ratelimit.Result and returns strings, so the same code
// serves HTTP responses (Set for one limit, SetMulti for several) and gRPC metadata (grpcmw
// lower-cases the names). A Style picks the fields (StyleXRateLimit, the default;
// StyleIETF; StyleBoth; StyleNone); a denial carries Retry-After whatever the style. Times are
// whole seconds from now, rounded up, so that they need no agreement between clocks and a client
// that waits them is never early. https://github.com/sluice-go/ratelimit/blob/main/docs/headers.md
// says what each field means and which style to choose.
//
// # Security
//
// These fields tell every client its remaining quota and the limit. A limit that reveals
// capacity (a limit per backend shard, say) should use StyleNone; Retry-After is still sent
// on denials.
package headers
