package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Load is how the load generator drives a server: Conns keep-alive connections, each from
// a loopback address of its own (127.0.0.2, 127.0.0.3, ...: one client IP per connection),
// each sending one request at a time, for Warmup and then for Duration, measured. With the
// header key, connection i walks the users u ≡ i (mod Conns) of Users, so that every user
// comes from one address (tollbooth's header key includes the address).
type Load struct {
	Conns    int
	Users    int
	Warmup   time.Duration
	Duration time.Duration
}

// DefaultLoad is the load of the e2e command.
var DefaultLoad = Load{Conns: 32, Users: 10_000, Warmup: 500 * time.Millisecond, Duration: 3 * time.Second}

// Sample is what one run of one variant measured.
type Sample struct {
	Variant   Variant
	Round     int
	Requests  int64           // answered within the measured window
	Elapsed   time.Duration   // the measured window
	ServerCPU time.Duration   // user + system time of the server process in the window
	Latencies []time.Duration // of the measured requests, sorted
}

// PerSecond is the requests answered per second.
func (s Sample) PerSecond() float64 { return float64(s.Requests) / s.Elapsed.Seconds() }

// CPUPerRequest is the server's CPU time per answered request.
func (s Sample) CPUPerRequest() time.Duration {
	if s.Requests == 0 {
		return 0
	}
	return s.ServerCPU / time.Duration(s.Requests)
}

// Quantile returns the q-quantile of the latencies (q in [0, 1]).
func (s Sample) Quantile(q float64) time.Duration {
	if len(s.Latencies) == 0 {
		return 0
	}
	return s.Latencies[min(int(q*float64(len(s.Latencies))), len(s.Latencies)-1)]
}

// drive runs ld against the server at addr for v, whose process is pid (0: do not measure
// its CPU), and returns the measured sample. Every answer must be v's traffic's: 200 for
// allow, 429 for deny (after each key's first request, made before the warm-up).
func drive(ctx context.Context, addr string, pid int, v Variant, ld Load) (Sample, error) {
	want := http.StatusOK
	if v.Traffic == "deny" {
		want = http.StatusTooManyRequests
	}
	url := "http://" + addr + "/items/1"
	clients := make([]*http.Client, ld.Conns)
	for i := range clients {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, byte(i/250), byte(2+i%250))}
		dialer := &net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
		clients[i] = &http.Client{Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			MaxIdleConnsPerHost: 1,
			DisableCompression:  true,
		}, Timeout: 10 * time.Second}
	}
	defer func() {
		for _, c := range clients {
			c.CloseIdleConnections()
		}
	}()
	users := func(conn int) []string {
		if v.Key != "header" {
			return []string{""}
		}
		var us []string
		for u := conn; u < ld.Users; u += ld.Conns {
			us = append(us, "user-"+strconv.Itoa(u))
		}
		return us
	}
	do := func(c *http.Client, user string) (int, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		if user != "" {
			req.Header.Set(userHeader, user)
		}
		res, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		return res.StatusCode, nil
	}

	// Deny traffic: each key's one allowed request, before the warm-up.
	if v.Traffic == "deny" {
		var wg sync.WaitGroup
		errs := make([]error, ld.Conns)
		for i, c := range clients {
			wg.Go(func() {
				for _, u := range users(i) {
					if code, err := do(c, u); err != nil || code != http.StatusOK {
						errs[i] = fmt.Errorf("%v: the first request of a key: status %d, error %v", v, code, err)
						return
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return Sample{}, err
			}
		}
	}

	const (
		warm = iota
		measure
		stop
	)
	var phase atomic.Int32
	type result struct {
		lat []time.Duration
		err error
	}
	results := make([]result, ld.Conns)
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			us := users(i)
			lat := make([]time.Duration, 0, 1<<14)
			for k := 0; ; k++ {
				p := phase.Load()
				if p == stop {
					break
				}
				start := time.Now()
				code, err := do(c, us[k%len(us)])
				if err == nil && code != want {
					err = fmt.Errorf("%v: status %d, want %d", v, code, want)
				}
				if err != nil {
					if phase.Load() != stop { // a request cut by the end of the run is no failure
						results[i].err = err
					}
					break
				}
				if p == measure && phase.Load() == measure {
					lat = append(lat, time.Since(start))
				}
			}
			results[i].lat = lat
		})
	}
	sleep(ctx, ld.Warmup)
	cpu0, err := processCPU(pid)
	if err != nil {
		phase.Store(stop)
		wg.Wait()
		return Sample{}, err
	}
	t0 := time.Now()
	phase.Store(measure)
	sleep(ctx, ld.Duration)
	phase.Store(stop)
	elapsed := time.Since(t0)
	cpu1, err := processCPU(pid)
	wg.Wait()
	if err != nil {
		return Sample{}, err
	}
	s := Sample{Variant: v, Elapsed: elapsed, ServerCPU: cpu1 - cpu0}
	for _, r := range results {
		if r.err != nil {
			return Sample{}, r.err
		}
		s.Latencies = append(s.Latencies, r.lat...)
	}
	if err := ctx.Err(); err != nil {
		return Sample{}, err
	}
	s.Requests = int64(len(s.Latencies))
	slices.Sort(s.Latencies)
	return s, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
