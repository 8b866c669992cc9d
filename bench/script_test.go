package bench

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

// redisCPU is the pinned mode of the Redis benchmarks: with -redis-cpu N, the redis-server a
// benchmark starts is moved to CPU N (taskset -p), away from the client, which must itself be
// kept off N, as by running go test under taskset -c on the other CPU:
//
//	cd bench && taskset -c 1 go test -run '^$' -bench 'RedisFloor' -benchtime 2s -args -redis-cpu 0
//
// Unpinned (the default), the scheduler places both processes, and a decision's latency
// depends on where it put them.
var redisCPU = flag.Int("redis-cpu", -1, "pin the redis-server of the Redis benchmarks to this CPU (the pinned mode; run go test itself on another CPU)")

// pinRedis moves srv to CPU *redisCPU, if the pinned mode is on.
func pinRedis(b *testing.B, srv *redistest.Server) {
	b.Helper()
	if *redisCPU < 0 {
		return
	}
	pid := redisInfo(b, srv, "server")["process_id"]
	if out, err := exec.Command("taskset", "-p", "-c", strconv.Itoa(*redisCPU), pid).CombinedOutput(); err != nil {
		b.Fatalf("taskset -p -c %d %s: %v: %s", *redisCPU, pid, err, out)
	}
}

// gcraVariant is the token bucket's script, distributed/gcra.lua, with some of its work
// taken away, to measure what that work costs Redis.
type gcraVariant struct {
	name string
	// edit rewrites the script's source; it returns "" when the source no longer holds what
	// it replaces (the script changed), and the variant is skipped.
	edit func(src string, rate float64, burst int) string
}

// replaceAll replaces each old with its new, or returns "" if an old is missing.
func replaceAll(src string, pairs ...string) string {
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			return ""
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

// readScript returns the script distributed/name.lua as the package assembles it on the
// Redis clock: each "-- @include NAME" line replaced by distributed/fragments/NAME.lua.
func readScript(b *testing.B, name string) string {
	b.Helper()
	src, err := os.ReadFile("../distributed/" + name + ".lua")
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	for line := range strings.Lines(string(src)) {
		frag, ok := strings.CutPrefix(line, "-- @include ")
		if !ok {
			out.WriteString(line)
			continue
		}
		text, err := os.ReadFile("../distributed/fragments/" + strings.TrimSpace(frag) + ".lua")
		if err != nil {
			b.Fatal(err)
		}
		out.Write(text)
	}
	return out.String()
}

var gcraVariants = []gcraVariant{
	{"gcra", func(src string, _ float64, _ int) string { return src }},
	{"gcra-no-args", func(src string, rate float64, burst int) string {
		// The three numeric arguments as constants: what parsing them costs.
		return replaceAll(src,
			"local rate = tonumber(ARGV[1])", "local rate = "+strconv.FormatFloat(rate, 'g', -1, 64),
			"local burst = tonumber(ARGV[2])", "local burst = "+strconv.Itoa(burst),
			"local cost = tonumber(ARGV[3])", "local cost = 1")
	}},
}

// BenchmarkRedisScript measures what the token bucket's script costs Redis, and where:
// gcra.lua as shipped (its fragments in: see readScript); without parsing its three numeric
// arguments; the floor script "calls+reply" (TIME, GET, SET and a four-integer reply,
// deciding nothing; see BenchmarkRedisFloor); and warmup.lua, the token bucket with a
// warm-up (an hour long, so the bucket is warming throughout). Each is one EVALSHA per decision, on
// the hot key, from 8 goroutines, under allow traffic (read, decide, write) and deny traffic (read,
// decide). srv-us/call, Redis's own time inside the script (usec_per_call), is the figure to
// compare: it does not depend on the client or on the scheduler.
//
//	cd bench && go test -run '^$' -bench 'RedisScript' -count 3
func BenchmarkRedisScript(b *testing.B) {
	src, warmup := readScript(b, "gcra"), readScript(b, "warmup")
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	ctx := context.Background()
	keys := ipKeys(1)
	for _, tr := range redisTraffics() {
		limit := tr.tb
		type contender struct {
			name   string
			script *redis.Script
			args   []any
		}
		var cs []contender
		for _, v := range gcraVariants {
			if s := v.edit(src, limit.Rate, limit.Burst); s != "" {
				cs = append(cs, contender{v.name, redis.NewScript(s), []any{limit.Rate, limit.Burst, 1}})
			}
		}
		cs = append(cs, contender{"warmup", redis.NewScript(warmup),
			[]any{limit.Rate, limit.Burst, 1, time.Hour.Microseconds()}})
		cs = append(cs, contender{"calls+reply", floorScripts[2].script, nil})
		for i, c := range cs {
			// Each contender has a key of its own, written (and under deny traffic, drained)
			// before the timer; the floor script always answers 1, allowed.
			key := []string{"script" + strconv.Itoa(i) + tr.name + ":" + keys[0]}
			decide := func(string) (bool, error) {
				v, err := c.script.Run(ctx, client, key, c.args...).Slice()
				if err != nil {
					return false, err
				}
				return v[0] == int64(1), nil
			}
			allow := tr.allow || c.name == "calls+reply"
			prepared := false
			b.Run(c.name+"/hot/"+tr.name+"/8", func(b *testing.B) {
				if !prepared { // once, before any timer: b.Run calls this more than once
					if ok, err := decide(""); err != nil || !ok {
						b.Fatalf("first call: allowed %v, error %v", ok, err)
					}
					prepared = true
				}
				runRedisLoad(b, srv, 8, keys, allow, decide)
			})
		}
	}
	for _, v := range gcraVariants {
		if v.edit(string(src), 1, 1) == "" {
			b.Logf("%s skipped: gcra.lua no longer holds what it takes away", v.name)
		}
	}
}
