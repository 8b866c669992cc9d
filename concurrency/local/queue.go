package local

import "github.com/sluice-go/ratelimit/concurrency"

// waiter is one caller waiting in a key's queue. Its fields other than ready are guarded by
// the shard's mutex until ready is closed, and read only by the caller after it.
type waiter struct {
	prev, next *waiter
	max        int
	ready      chan struct{} // closed by finish
	done       bool          // finish has run
	permit     concurrency.Permit
	err        error
}

// finish gives w its permit or its error and wakes it. The shard's mutex is held and w is
// out of the queue.
func (w *waiter) finish(p concurrency.Permit, err error) {
	w.permit, w.err, w.done = p, err, true
	close(w.ready)
}

// waitList is a key's queue: a doubly linked list, so that a waiter whose context ends
// leaves from anywhere in it at once.
type waitList struct {
	head, tail *waiter
	n          int
}

func (q *waitList) front() *waiter { return q.head }
func (q *waitList) back() *waiter  { return q.tail }

func (q *waitList) pushBack(w *waiter) {
	w.prev, w.next = q.tail, nil
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

func (q *waitList) popFront() *waiter {
	w := q.head
	q.remove(w)
	return w
}

func (q *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next = nil, nil
	q.n--
}
