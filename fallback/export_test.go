package fallback

// CacheLen returns the number of denials l's cache holds, expired or not; 0 without a cache.
func CacheLen(l *Limiter) int {
	if l.cache == nil {
		return 0
	}
	return l.cache.len()
}
