package distributed

// Pending returns how many releases l has not had confirmed by Redis yet.
func Pending(l *Limiter) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pending.n
}
