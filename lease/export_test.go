package lease

// Settle waits for the grants asked for in the background.
func Settle(l *Limiter) { l.flights.Wait() }

// Sweep runs one pass of the janitor.
func Sweep(l *Limiter) { l.sweep() }

// ID is the instance id of l.
func ID(l *Limiter) string { return l.id }
