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
// ended ones. Releasing is another, which deletes the member. Each call touches one key, so
// Redis Cluster never answers CROSSSLOT; a key containing a hash tag ({…}) is placed by it.
//
// A lease lasts the TTL (WithTTL); one goroutine per Limiter renews the leases of every
// permit it holds each third of the TTL, one script per key, until Close. So a long request
// keeps its permit, and a process that dies (or loses Redis) holds its permits for at most
// the TTL. A lease that ended before its renewal arrived is not revived: its holder runs on,
// one above max, until it finishes.
//
// # Waiting
//
// Acquire asks again at a jittered interval (WithPoll) until a permit is free or its
// context ends; waiters are not ordered, in one process or across several. At most
// WithQueue callers of one Limiter wait for one key; beyond them Acquire returns
// concurrency.ErrQueueFull.
//
// # Failures
//
// New does not contact Redis. Each round trip has a deadline (WithTimeout); an acquisition
// that passes it returns an error wrapping ratelimit.ErrTimeout, and one whose reply is lost
// is released again at once, so a failed call holds nothing. A caller whose context ends
// gets an error wrapping ctx.Err(). Under maxmemory with noeviction, Redis refuses the
// script's first write, which is the admitting one: a full Redis refuses acquisitions
// (with its OOM error) and writes nothing, while releases still work.
//
// Keys may carry personal data: hash them first if Redis must not hold it.
package distributed
