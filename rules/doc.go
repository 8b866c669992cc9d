// Package rules keeps limits in configuration: a rules file maps requests to named
// policies, each with one or more limits decided all or nothing, on a key the program's
// registered key functions find (or the middleware's default key, for a policy that names
// none), with a cost, a priority, a shadow flag and a concurrency; the middlewares take
// them through their WithRules option.
//
//	live := rules.New(rules.Registry{"client-ip": rules.HTTPKey(httpkeys.ClientIP())})
//	handler := httpmw.New(limiter, httpmw.WithRules(live))(mux)
//
// after live.LoadFile("rules.json"), which refuses a bad file, and with go live.Watch(...)
// to reload it when it changes; ExampleNew runs it whole.
//
// A file is JSON (ParseJSON), or YAML through the nested module rulesyaml. Rules are tried
// in order and the first whose match holds decides; a request no rule matches gets the
// default policy, or is not limited. Every error of a file names the file, the line and
// the rule or policy, unknown fields included, and a limit the limiter would refuse is
// refused at load, never at request time: every middleware built on the rules checks each
// set against its limiter before it comes into force (Rules.Require). A reload swaps the
// whole set at once, without a lock on the request path; a file that fails keeps the set in
// force, and Watch never loads one caught half-written (Rules.Watch).
//
// # Security
//
// A key or a plan is only as trustworthy as the function that reads it: register key
// functions that read what the server has verified (the peer's address, a session, a
// signed token), never a header or a parameter the client chooses, or a client picks its
// own plan and its own bucket.
//
// # Reloads and usage
//
// A policy's limits keep their usage across a reload that changes their numbers
// (ratelimit.Limit.KeepUsage, set on every limit but one with a warm-up): a bucket is the
// policy's name, its key and its algorithm. Changing a limit's algorithm, or its warm-up,
// starts fresh buckets.
//
// See https://github.com/sluice-go/ratelimit/blob/main/docs/rules.md.
package rules
