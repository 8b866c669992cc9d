package redistest

import (
	"errors"
	"fmt"
	"time"
)

const (
	firstPause = 2 * time.Millisecond
	maxPause   = 100 * time.Millisecond
)

// poll calls try until it reports done or timeout elapses. The pause between
// tries starts short, because a local redis-server is usually ready within
// milliseconds, and grows so a slow machine is not hammered.
//
// try returns done=true to stop, with a nil error on success. While not done
// its error says why not yet, so a timeout can report the last reason.
func poll(timeout time.Duration, try func() (done bool, err error)) error {
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for {
		done, err := try()
		if done {
			return err
		}
		if err == nil {
			err = errors.New("condition not met")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", timeout, err)
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
}
