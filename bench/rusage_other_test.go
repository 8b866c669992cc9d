//go:build !unix

package bench

import "time"

// processCPU returns -1: this platform offers no getrusage.
func processCPU() time.Duration { return -1 }
