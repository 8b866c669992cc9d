package distributed

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLeaseIDsUnique(t *testing.T) {
	// Acquisitions named at once on both cores never share an id: acquire.lua grants a live
	// id again as the same grant (a resent call), so two callers with one id would both hold
	// a permit that Redis counts once (the fleet test saw 4 holders for max 3). 8 goroutines
	// name 20,000 leases each, all at once: 160,000 ids, as many distinct.
	const goroutines, each = 8, 20000
	l := &Limiter{}
	ids := make([][]string, goroutines)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			ls := newLease(l)
			<-start
			for range each {
				l.name(ls)
				ids[g] = append(ids[g], string(ls.id[:]))
			}
		})
	}
	close(start)
	wg.Wait()
	seen := make(map[string]bool, goroutines*each)
	for _, set := range ids {
		for _, id := range set {
			seen[id] = true
		}
	}
	assert.Equal(t, goroutines*each, len(seen), "distinct ids")
}
