package distributed_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// usedMemory returns the used_memory of server's INFO, in bytes.
func usedMemory(t *testing.T, server *redistest.Server) int {
	t.Helper()
	info, err := server.Do("INFO", "memory")
	require.NoError(t, err)
	for line := range strings.Lines(info.(string)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.Atoi(v)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// fillMemory caps server's memory 1 MB above what it uses, with the noeviction policy, and
// writes filler keys until Redis refuses one. Then it lowers the cap 256 kB below what Redis
// uses, so that Redis freeing a buffer cannot bring it back under: from then on it is out
// of memory.
func fillMemory(t *testing.T, server *redistest.Server) {
	t.Helper()
	_, err := server.Do("CONFIG", "SET", "maxmemory-policy", "noeviction")
	require.NoError(t, err)
	setCap := func(bytes int) {
		_, err := server.Do("CONFIG", "SET", "maxmemory", strconv.Itoa(bytes))
		require.NoError(t, err)
	}
	setCap(usedMemory(t, server) + 1<<20)
	value := strings.Repeat("x", 64<<10)
	for i := 0; ; i++ {
		require.Less(t, i, 1000, "1 MB should take about 16 writes of 64 kB")
		if _, err := server.Do("SET", "filler:"+strconv.Itoa(i), value); err != nil {
			require.ErrorContains(t, err, "OOM")
			break
		}
	}
	setCap(usedMemory(t, server) - 256<<10)
}

// TestMaxmemoryNoEviction: under maxmemory with the noeviction policy, Redis refuses a
// script's command that may grow memory only while the script has not written anything yet.
// Every script's first write is the one that admits, so once Redis is full every admission
// fails with Redis's OOM error and writes nothing, and denials, which write nothing, are
// still answered. (The sliding log used to trim its sorted set before adding to it: that
// first write let every ZADD after it through, and Redis grew without bound.) A key holding
// a value no script writes is refused too: the admission that would replace it is refused.
func TestMaxmemoryNoEviction(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	// A window of a day: nothing leaves it during the test, whatever the clock.
	limit := ratelimit.Limit{Rate: 1000.0 / 86400, Burst: 1000}
	const prefix = "oom:"
	limiters := map[ratelimit.Algorithm]*distributed.Limiter{}
	for _, alg := range ratelimittest.Algorithms() {
		l := newLimiter(t, client, ratelimittest.NewClock(),
			distributed.WithAlgorithm(alg), distributed.WithPrefix(prefix+alg.String()+":"))
		limiters[alg] = l
		// Before Redis is full: one bucket drained, one half used.
		res, err := l.AllowN(ctx, "drained", limit, 1000)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		res, err = l.AllowN(ctx, "half", limit, 500)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		// And a value no script writes, which an admission would replace.
		foreignKey := prefix + alg.String() + ":foreign:" + tags[alg] + ":" +
			strconv.FormatFloat(limit.Rate, 'g', -1, 64) + ":1000"
		_, err = server.Do("HSET", foreignKey, "field", "1")
		require.NoError(t, err)
	}
	fillMemory(t, server)
	before := usedMemory(t, server)

	for _, alg := range ratelimittest.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			l := limiters[alg]
			keys, err := server.Do("KEYS", prefix+alg.String()+":*")
			require.NoError(t, err)
			require.Len(t, keys, 3)
			dump := func() []string {
				var values []string
				for _, k := range keys.([]any) {
					v, err := server.Do("DUMP", k.(string))
					require.NoError(t, err)
					values = append(values, v.(string))
				}
				return values
			}
			stored := dump()
			for _, key := range []string{"new", "half", "foreign"} {
				// Ten admissions that would each add 100 tokens' worth: every one refused.
				for range 10 {
					_, err := l.AllowN(ctx, key, limit, 100)
					require.ErrorContains(t, err, "OOM command not allowed", "key %q", key)
				}
			}
			res, err := l.Allow(ctx, "drained", limit)
			require.NoError(t, err, "a denial writes nothing: Redis answers it when full")
			require.False(t, res.Allowed)
			require.Zero(t, res.Remaining)

			// Nothing was written: no new key, and the two buckets are as they were.
			after, err := server.Do("KEYS", prefix+alg.String()+":*")
			require.NoError(t, err)
			require.ElementsMatch(t, keys, after)
			require.Equal(t, stored, dump())
		})
	}
	// 50 refused admissions of 100 tokens each: the sliding log's old script added them
	// (about 65 kB for each one), and Redis grew several MB past its cap.
	require.Less(t, usedMemory(t, server), before+256<<10)
}
