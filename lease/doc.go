// Package lease decides a fleet's hot keys from chunks of tokens leased from their Redis
// buckets: each instance takes a chunk in one call (all the bucket holds, up to the chunk)
// and spends it locally, with no round trip and no lock, asking for the next before it
// runs out. Tokens are debited in Redis before they are spent and the bucket never goes
// below empty, so a fleet of k instances with chunks of at most c admits at most
// Burst + Rate·W + k·c in any window W. Keys not marked hot go to the backend as they are.
//
// Unused tokens go back on Close and when a key goes cold; a dead instance's come back when
// its lease ends, from a record in Redis. A retried grant is debited once: each carries the
// instance's id and a sequence number that the script checks. See
// https://github.com/sluice-go/ratelimit/blob/main/docs/leases.md for when to lease, the
// bound's derivation, the options and the measured figures.
package lease
