package local

import (
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/waitlist"
)

// waiter is one caller waiting in a key's queue. Its fields other than ready are guarded by
// the shard's mutex until ready is closed, and read only by the caller after it.
type waiter struct {
	waitlist.Links[waiter]
	max    int
	ready  chan struct{} // closed by finish
	done   bool          // finish has run
	permit concurrency.Permit
	err    error
}

// finish gives w its permit or its error and wakes it. The shard's mutex is held and w is
// out of the queue.
func (w *waiter) finish(p concurrency.Permit, err error) {
	w.permit, w.err, w.done = p, err, true
	close(w.ready)
}

// waitList is a key's queue, oldest first.
type waitList = waitlist.List[waiter, *waiter]
