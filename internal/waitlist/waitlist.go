// Package waitlist is the queue of waiters both concurrency backends keep per key: a doubly
// linked list whose elements carry their own links, so that a waiter whose context ends
// leaves from anywhere in it at once, and joining it allocates nothing beyond the waiter.
package waitlist

// Links are an element's place in a List: embed Links[T] in T.
type Links[T any] struct {
	prev, next *T
}

func (l *Links[T]) links() *Links[T] { return l }

// Elem is the type of a List's elements: a *T whose T embeds Links[T].
type Elem[T any] interface {
	*T
	links() *Links[T]
}

// List is a queue of *T, oldest at the front. The zero List is empty. It is not safe for
// concurrent use: its owner guards it.
type List[T any, P Elem[T]] struct {
	head, tail P
	n          int
}

// Len returns the number of elements.
func (q *List[T, P]) Len() int { return q.n }

// Front returns the oldest element, nil when the list is empty.
func (q *List[T, P]) Front() P { return q.head }

// Back returns the newest element, nil when the list is empty.
func (q *List[T, P]) Back() P { return q.tail }

// PushBack adds w, which is in no list, at the back.
func (q *List[T, P]) PushBack(w P) {
	l := w.links()
	l.prev, l.next = (*T)(q.tail), nil
	if q.tail != nil {
		q.tail.links().next = (*T)(w)
	} else {
		q.head = w
	}
	q.tail = w
	q.n++
}

// PopFront removes the oldest element and returns it; the list must not be empty.
func (q *List[T, P]) PopFront() P {
	w := q.head
	q.Remove(w)
	return w
}

// Remove takes w, an element of q, out of it.
func (q *List[T, P]) Remove(w P) {
	l := w.links()
	if l.prev != nil {
		P(l.prev).links().next = l.next
	} else {
		q.head = P(l.next)
	}
	if l.next != nil {
		P(l.next).links().prev = l.prev
	} else {
		q.tail = P(l.prev)
	}
	l.prev, l.next = nil, nil
	q.n--
}
