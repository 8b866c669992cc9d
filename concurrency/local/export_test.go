package local

// Tracked returns how many keys l tracks, for tests of the key cap.
func (l *Limiter) Tracked() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		n += len(sh.keys)
		sh.mu.Unlock()
	}
	return n
}
