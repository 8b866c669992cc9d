package bench

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

// pinEnv names the CPU that the Redis benchmarks pin redis-server to, with taskset; unset,
// Redis runs where the scheduler puts it. Pin the benchmark itself to another CPU by
// starting it under taskset (docs/benchmarks.md has the command), so that the figures stop
// depending on where the scheduler puts the two.
const pinEnv = "RATELIMIT_BENCH_REDIS_CPU"

// pinRedis pins every thread of srv to the CPU pinEnv names, if it names one.
func pinRedis(b *testing.B, srv *redistest.Server) {
	cpu := os.Getenv(pinEnv)
	if cpu == "" {
		return
	}
	if _, err := strconv.Atoi(cpu); err != nil {
		b.Fatalf("%s=%q: not a CPU number", pinEnv, cpu)
	}
	if out, err := exec.Command("taskset", "-a", "-cp", cpu, strconv.Itoa(srv.Pid())).CombinedOutput(); err != nil {
		b.Fatalf("taskset: %v: %s", err, out)
	}
}
