package distributed_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

// inFlight counts the fleet's holders in Redis, apart from the limiter: +1 or -1 on
// KEYS[1], keeping the highest count seen in KEYS[2].
var inFlight = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)

// fleetRuns is how many bursts TestFleetNeverExceedsMax runs: 3 keep make test near 10 s
// under -race; the bar the limiter is held to is 20 (-fleet.runs=20).
var fleetRuns = flag.Int("fleet.runs", 3, "bursts of TestFleetNeverExceedsMax (the bar is 20)")

const (
	fleetAddrEnv = "DISTRIBUTED_FLEET_ADDR" // set in the re-executed test binary
	fleetMax     = 3
	fleetCalls   = 300 // per process and run
)

func TestFleetNeverExceedsMax(t *testing.T) {
	// Two processes (this test binary, re-executed), 64 goroutines each, bursts of short
	// calls on one key with max 3, default options, while the machine is loaded by a CPU
	// burner in this process and more Ps than cores in the others. Each holder counts
	// itself in Redis with the test's own script: the peak is at most 3 in every run, and
	// every call is served (a refusal would be a permit missed for the whole deadline).
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	burn, stopBurn := context.WithCancel(t.Context())
	var burners sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		burners.Go(func() {
			for burn.Err() == nil {
				for i := 0; i < 1e5; i++ {
					_ = i * i
				}
			}
		})
	}
	defer func() { stopBurn(); burners.Wait() }()
	for run := range *fleetRuns {
		require.NoError(t, client.Del(t.Context(), "fleet:now", "fleet:peak").Err())
		var outs [2]bytes.Buffer
		var cmds [2]*exec.Cmd
		for i := range cmds {
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestFleetProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), fleetAddrEnv+"="+server.Addr(), "GOMAXPROCS="+strconv.Itoa(4*runtime.NumCPU()))
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			require.NoError(t, cmd.Start())
			cmds[i] = cmd
		}
		for i, cmd := range cmds {
			require.NoError(t, cmd.Wait(), "run %d, process %d:\n%s", run, i, outs[i].String())
			assert.Contains(t, outs[i].String(), fmt.Sprintf("served %d of %d", fleetCalls, fleetCalls), "run %d, process %d", run, i)
		}
		peak, err := client.Get(t.Context(), "fleet:peak").Int()
		require.NoError(t, err)
		require.LessOrEqual(t, peak, fleetMax, "run %d:\n%s\n%s", run, outs[0].String(), outs[1].String())
		assert.Equal(t, fleetMax, peak, "run %d: 128 callers for 3 permits fill them", run)
		assert.Equal(t, int64(0), holders(t, client, "fleet"), "run %d", run)
	}
}

// TestFleetProcess is one process of TestFleetNeverExceedsMax; it does nothing unless
// that test started it.
func TestFleetProcess(t *testing.T) {
	addr := os.Getenv(fleetAddrEnv)
	if addr == "" {
		return
	}
	client := newClient(t, addr)
	l := newLimiter(t, client)
	var served atomic.Int64
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= fleetCalls {
				ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
				p, err := l.Acquire(ctx, "fleet", fleetMax)
				cancel()
				if err != nil {
					t.Error(err)
					continue
				}
				keys := []string{"fleet:now", "fleet:peak"}
				if err := inFlight.Run(t.Context(), client, keys, 1).Err(); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Millisecond) // the call's work
				if err := inFlight.Run(t.Context(), client, keys, -1).Err(); err != nil {
					t.Error(err)
				}
				p.Release()
				served.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Println(strings.TrimSpace(fmt.Sprintf("served %d of %d", served.Load(), fleetCalls)))
}
