// Package distributed is the Redis backend of package concurrency: permits live in Redis,
// so that "at most max at once" holds across every instance of a service. It works with
// any go-redis v9 client: a single node, Sentinel (redis.NewFailoverClient), Redis Cluster,
// or a Ring.
//
// # Permits and leases
//
// A key is one sorted set: a member per permit, named by the limiter that holds it, scored
// by the end of its lease on the Redis clock (microseconds since 2020). Acquiring is one Lua
// script on that key: count the live leases, and if fewer than max add one and trim the
// ended ones. Releasing is another, which deletes the member and publishes a wake-up. Each
// call touches one key, so Redis Cluster never answers CROSSSLOT; a key containing a hash
// tag ({…}) is placed by it.
//
// A lease lasts the TTL (WithTTL); a goroutine per Limiter renews the leases of every
// permit it holds each third of the TTL, one script per key, until Close. So a long request
// keeps its permit, and a process that dies holds its permits for at most the TTL. A lease
// that ended before its renewal arrived is not revived: its holder runs on, one above max,
// until it finishes. A lease Redis lost while live (a restart, a flush) is added back.
//
// # No orphan leases
//
// A permit's id is chosen before its acquisition is sent. When the call fails (a timeout,
// a lost reply, a caller gone), the id is released in the background whatever Redis did
// with it; released before it arrived, it is a tombstone that acquire.lua refuses. A
// release Redis does not confirm is retried by the background goroutine until it is, or
// until Close, after which the lease ends with its TTL.
//
// # Waiting
//
// A limiter's callers waiting for a key form a queue, served oldest first; only the first
// asks Redis, when woken: at once by a release in this process, through Redis pub/sub (one
// connection per limiter, subscribed to the keys waited for; on a Cluster, one per hash
// slot waited for, at most 32, on shard channels: SSUBSCRIBE, SPUBLISH) by a release in
// another, and every WithPoll otherwise, a safety net for a wake-up lost (and the only
// wake-up on a Ring, or for the keys of a 33rd slot). Each release wakes the first
// waiter of every limiter waiting for the key, and the first to ask gets the permit: the
// order holds in each process, not across them. At most WithQueue callers of one Limiter
// wait for one key; beyond them Acquire returns concurrency.ErrQueueFull.
//
// # Failures
//
// New does not contact Redis. Each round trip has a deadline (WithTimeout), the limiter's
// own ones always, so that Close never waits on a hung Redis. A round trip that times out is
// tried again, within the caller's context, while Redis answered within the last TTL: a
// slow Redis still limits. After that, or after a few other failures in a row, the call
// gets a permit of this instance's share of max (WithInstances), counted in the process, or
// the error (WithOnFailure). A caller whose context ends gets an error wrapping ctx.Err().
// Under maxmemory with noeviction, Redis refuses the script's first write, the admitting
// one: a full Redis refuses acquisitions (with its OOM error), not releases.
//
// Keys may carry personal data: hash them first if Redis must not hold it.
package distributed
