// Package redistest starts real Redis servers for tests: one redis-server
// process with NewServer, a Redis Cluster of three masters (and replicas, with
// WithReplicas) with NewCluster, or a master and its replica watched by three
// sentinels with NewSentinel.
//
// A real server is used instead of an in-process fake because the behaviour
// worth testing against Redis — scripting, expiry, cluster slot ownership and
// MOVED redirects — is exactly what a fake would get subtly wrong.
//
// Every server listens only on 127.0.0.1, on a port picked when it starts,
// keeps nothing on disk, and runs in its own tb.TempDir. Its output is captured
// and shown when the test fails, and it is stopped and reaped by tb.Cleanup, so
// tests never have to tidy up. Server.Stop and Server.Kill exist for tests that
// need Redis to disappear mid-run (Kill as in a crash, for failovers:
// Cluster.AwaitFailover and Sentinel.AwaitFailover wait for the replica to take
// over), and Server.Restart for those that need it back on the same port, empty.
//
// The server program is redis-server, or the one ServerEnv (REDISTEST_SERVER) names, such as
// valkey-server. When it or the command-line client is not installed the test fails
// instead of skipping: a skipped Redis test looks green in CI while testing nothing.
//
// Server.Do, and the small RESP2 client behind it, is meant for arranging and
// inspecting state from tests. It is not a general client: one command at a
// time per Server, no pipelining and no redirect following.
package redistest
