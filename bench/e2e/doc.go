// Package e2e compares rate-limit middlewares end to end, through real HTTP servers on
// loopback: ours (ginmw, httpmw) beside ulule/limiter (Gin and net/http, in memory and on
// Redis), go-chi/httprate, sethvargo/go-limiter's httplimit and tollbooth (net/http, in
// memory), and the handler alone, keyed by the client's address or by the X-User header
// over 10,000 users, with traffic that is always allowed or always denied.
//
// Each run starts the server of one variant in a process of its own (pinned to one CPU
// with taskset), drives it from 32 keep-alive connections, each from its own loopback
// address, and measures the requests answered, the server process's CPU time per request
// and the latency quantiles; every answer must be 200 (allow) or 429 (deny). The variants
// take turns round by round, so that a busy machine weighs on all alike. cmd/e2e runs it:
//
//	cd bench && go run ./cmd/e2e -rounds 3
//
// TestSmoke runs a short version with the tests.
package e2e
