package bench

import (
	"context"
	"flag"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

var callgrind = flag.Bool("callgrind", false, "BenchmarkScriptInstructions: count redis-server's instructions under valgrind")

// BenchmarkScriptInstructions counts the instructions redis-server executes per EVALSHA of each of
// BenchmarkRedisScript's scripts, and of gcra.lua for a request that keeps a priority
// reserve (gcra+reserve), under valgrind --tool=callgrind: a figure that, unlike time, does
// not depend on the machine's load. It runs with -callgrind (valgrind and
// callgrind_control in PATH) and takes about a minute:
//
//	cd bench && go test -run '^$' -bench ScriptInstructions -benchtime 1x -v -args -callgrind
//
// It is a benchmark, not a test, so that make test, which runs no benchmark, never skips it.
//
// Each count is redis-server's whole work for the call (reading the request, running the
// script, writing the reply), so differences between scripts are what the scripts cost.
func BenchmarkScriptInstructions(b *testing.B) {
	if !*callgrind {
		b.Skip("runs with -callgrind")
	}
	t := b
	src := readScript(b, "gcra")
	vg := startCallgrindRedis(b)
	client, ctx := vg.client, context.Background()

	const calls = 4000
	type contender struct {
		name   string
		script *redis.Script
		args   []any // nil: the traffic's limit, one token, Redis TIME
	}
	for _, tr := range redisTraffics() {
		limit := tr.tb
		scripts := []contender{{"return1", noop, nil}, {"calls+reply", floorScripts[2].script, nil}}
		for _, v := range gcraVariants {
			if s := v.edit(src, limit.Rate, limit.Burst); s != "" {
				scripts = append(scripts, contender{v.name, redis.NewScript(s), nil})
			}
		}
		// gcra.lua for a request that keeps a reserve (a priority below Critical, ARGV[5]):
		// under allow traffic half the burst kept back, which the run never reaches; under
		// deny traffic a Burst of 2 with 1 kept back, which the first call leaves at the
		// reserve, so that every timed call is denied.
		reserve := []any{limit.Rate, limit.Burst, 1, "", limit.Burst / 2}
		if !tr.allow {
			reserve = []any{limit.Rate, 2, 1, "", 1}
		}
		scripts = append(scripts, contender{"gcra+reserve", redis.NewScript(src), reserve})
		for _, sc := range scripts {
			name, script := sc.name, sc.script
			key := []string{"ir:" + name + ":" + tr.name}
			args := sc.args
			if args == nil {
				args = []any{limit.Rate, limit.Burst, 1}
			}
			// loaded, and drained under deny
			require.NoError(t, script.Run(ctx, client, key, args...).Err())
			ir := vg.count(b, calls, func() {
				require.NoError(t, script.EvalSha(ctx, client, key, args...).Err())
			})
			t.Logf("%-20s %-5s %7d instructions per call", name, tr.name, ir)
		}
	}
}

// callgrindRedis is a redis-server run under valgrind --tool=callgrind.
type callgrindRedis struct {
	client *redis.Client
	pid    string
	dir    string // where callgrind dumps
}

// startCallgrindRedis starts a redis-server under callgrind, stopped at b's cleanup.
func startCallgrindRedis(b *testing.B) *callgrindRedis {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(b, ln.Close())
	dir := b.TempDir()
	cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file="+filepath.Join(dir, "cg.%p"),
		"redis-server", "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no")
	require.NoError(b, cmd.Start())
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	client := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))})
	b.Cleanup(func() { client.Close() })
	require.Eventually(b, func() bool { return client.Ping(context.Background()).Err() == nil }, time.Minute, 100*time.Millisecond)
	return &callgrindRedis{client: client, pid: strconv.Itoa(cmd.Process.Pid), dir: dir}
}

// count calls call calls times, with redis-server's counters zeroed before and dumped after,
// and returns the instructions it executed per call.
func (vg *callgrindRedis) count(b *testing.B, calls int, call func()) int64 {
	require.NoError(b, exec.Command("callgrind_control", "-z", vg.pid).Run())
	for range calls {
		call()
	}
	before, _ := filepath.Glob(filepath.Join(vg.dir, "cg.*"))
	require.NoError(b, exec.Command("callgrind_control", "-d", vg.pid).Run())
	var dump string
	require.Eventually(b, func() bool {
		after, _ := filepath.Glob(filepath.Join(vg.dir, "cg.*"))
		if len(after) > len(before) {
			dump = newest(after)
			return true
		}
		return false
	}, time.Minute, 50*time.Millisecond)
	return totalIr(b, dump) / int64(calls)
}

// newest returns the most recently modified of paths.
func newest(paths []string) string {
	var best string
	var when time.Time
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(when) {
			best, when = p, fi.ModTime()
		}
	}
	return best
}

// totalIr reads the instruction count a callgrind dump totals.
func totalIr(t testing.TB, path string) int64 {
	var text string
	require.Eventually(t, func() bool { // the dump may still be being written
		b, err := os.ReadFile(path)
		text = string(b)
		return err == nil && (strings.Contains(text, "\nsummary:") || strings.Contains(text, "\ntotals:"))
	}, time.Minute, 50*time.Millisecond)
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "summary: "); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, "totals: "); ok {
			n, err := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatalf("no total in %s", path)
	return 0
}
