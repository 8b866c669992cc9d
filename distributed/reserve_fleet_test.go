package distributed_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// The environment of a TestReserveFleetProcess: the server, the key prefix.
const reserveAddrEnv, reservePrefixEnv = "RATELIMIT_RESERVE_FLEET_ADDR", "RATELIMIT_RESERVE_FLEET_PREFIX"

// fleetLimit is the bucket the fleet books on: 10/s, Burst 64, drained before the fleet
// starts, so that every booking's slot is on one chain of the TAT for 6.4 s.
var fleetLimit = ratelimit.Limit{Rate: 10, Burst: 64}

// TestReserveSpacing: 64 goroutines over 4 processes each book one slot on one key, on the
// Redis clock. The bucket was drained at d: the k-th booking's tokens conform at d + (k+1)
// tokens, so the slots (Charge.At + Delay) are exactly d + 100 ms, d + 200 ms, ... d + 6.4 s,
// each once, to the microsecond (the script rounds a wait to the nearest µs), and each
// booking was one script.
func TestReserveSpacing(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	prefix := uniquePrefix()
	l, err := distributed.New(client, distributed.WithPrefix(prefix))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ctx := context.Background()
	var outs [4]bytes.Buffer
	var cmds [4]*exec.Cmd
	for i := range cmds {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestReserveFleetProcess$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), reserveAddrEnv+"="+server.Addr(), reservePrefixEnv+"="+prefix)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		require.NoError(t, cmd.Start())
		cmds[i] = cmd
	}
	// Every process is up and waiting (it has pushed "ready"); drain the bucket, then let
	// them go at once.
	for range cmds {
		require.NoError(t, client.BLPop(ctx, time.Minute, prefix+"ready").Err())
	}
	drain, err := l.AllowN(ctx, "k", fleetLimit, fleetLimit.Burst)
	require.NoError(t, err)
	require.True(t, drain.Allowed)
	for range cmds {
		require.NoError(t, client.RPush(ctx, prefix+"go", "go").Err())
	}
	var slots []int64
	for i, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "process %d:\n%s", i, outs[i].String())
		sc := bufio.NewScanner(&outs[i])
		calls := int64(-1)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 2 && f[0] == "slot" {
				us, err := strconv.ParseInt(f[1], 10, 64)
				require.NoError(t, err)
				slots = append(slots, us)
			}
			if len(f) == 2 && f[0] == "calls" {
				calls, err = strconv.ParseInt(f[1], 10, 64)
				require.NoError(t, err)
			}
		}
		require.Equal(t, int64(16), calls, "process %d: one script a booking", i)
	}
	require.Len(t, slots, 64)
	slices.Sort(slots)
	d := drain.Charge.At.UnixMicro()
	for k, us := range slots {
		want := d + int64(k+1)*100_000
		require.InDelta(t, want, us, 1, "slot %d: %d µs after the drain", k, us-d)
	}
}

// TestReserveFleetProcess is one process of TestReserveSpacing; it does nothing unless that
// test started it. Its 16 goroutines each book one slot and print it, in µs on the Redis
// clock, and the process prints how many scripts it ran.
func TestReserveFleetProcess(t *testing.T) {
	addr := os.Getenv(reserveAddrEnv)
	if addr == "" {
		return
	}
	client := newClient(t, addr)
	prefix := os.Getenv(reservePrefixEnv)
	l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	defer l.Close()
	ctx := context.Background()
	// Load the script before counting: its first call may be an EVALSHA and an EVAL.
	_, err = l.Reserve(ctx, "warm", fleetLimit, 1, 0)
	require.NoError(t, err)
	hook := &counting{}
	client.AddHook(hook)
	require.NoError(t, client.RPush(ctx, prefix+"ready", "ready").Err())
	require.NoError(t, client.BLPop(ctx, time.Minute, prefix+"go").Err())
	before := hook.n.Load()
	var mu sync.Mutex
	var lines []string
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			res, err := l.Reserve(ctx, "k", fleetLimit, 1, time.Minute)
			if err != nil || !res.Allowed {
				panic(fmt.Sprintf("Reserve: %+v, %v", res, err))
			}
			mu.Lock()
			lines = append(lines, fmt.Sprintf("slot %d", res.Charge.At.Add(res.Delay).UnixMicro()))
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Println(strings.Join(lines, "\n"))
	fmt.Printf("calls %d\n", hook.n.Load()-before)
}
