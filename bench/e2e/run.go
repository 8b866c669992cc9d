package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config is a comparison: which variants, how many rounds, what load, and how to start a
// server.
type Config struct {
	// Only filters the variants (see Variants).
	Only Variant
	// Rounds is how many times each variant runs; the variants take turns, round by round,
	// each round starting one further along the list.
	Rounds int
	Load   Load
	// Server is the command that serves a variant: the variant and the Redis address are
	// appended as "-variant" and "-redis" flags; it prints "listening ADDR" on its standard
	// output and serves until its standard input closes (see Serve).
	Server []string
	// ServerCPU, when not empty, pins each server and redis-server to that CPU with taskset
	// ("1"); the load generator should run on another (see cmd/e2e).
	ServerCPU string
	// RedisServer is the redis-server binary the redis variants use.
	RedisServer string
	// Log, when not nil, is told of each run.
	Log io.Writer
}

// Run runs the comparison and returns its samples, in the order they were taken.
func Run(ctx context.Context, cfg Config) ([]Sample, error) {
	vs := Variants(cfg.Only)
	if len(vs) == 0 {
		return nil, errors.New("e2e: no variant matches")
	}
	var rdb *redis.Client
	redisAddr := ""
	for _, v := range vs {
		if v.Backend == "redis" && rdb == nil {
			addr, stop, err := startRedis(ctx, cfg)
			if err != nil {
				return nil, err
			}
			defer stop()
			redisAddr = addr
			rdb = redis.NewClient(&redis.Options{Addr: addr})
			defer rdb.Close()
		}
	}
	var samples []Sample
	for round := range cfg.Rounds {
		for i := range vs {
			v := vs[(i+round)%len(vs)]
			if rdb != nil && v.Backend == "redis" {
				if err := rdb.FlushAll(ctx).Err(); err != nil {
					return samples, err
				}
			}
			s, err := runOne(ctx, cfg, v, redisAddr)
			if err != nil {
				return samples, fmt.Errorf("round %d: %w", round+1, err)
			}
			s.Round = round
			samples = append(samples, s)
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "round %d  %-36s %8.0f req/s  %6.1f µs CPU/req  p99 %v\n", round+1, v,
					s.PerSecond(), micros(s.CPUPerRequest()), s.Quantile(0.99))
			}
		}
	}
	return samples, nil
}

// runOne starts v's server, drives it, and stops it.
func runOne(ctx context.Context, cfg Config, v Variant, redisAddr string) (Sample, error) {
	args := append(append([]string(nil), cfg.Server...), "-variant", v.String(), "-redis", redisAddr)
	cmd := pinned(ctx, cfg.ServerCPU, args)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Sample{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Sample{}, err
	}
	if err := cmd.Start(); err != nil {
		return Sample{}, fmt.Errorf("%v: %w", v, err)
	}
	defer func() {
		_ = stdin.Close() // the server's signal to stop
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		return Sample{}, fmt.Errorf("%v: the server did not start: %q %v", v, line, err)
	}
	return drive(ctx, addr, serverPID(cmd), v, cfg.Load)
}

// serverPID is the process whose CPU time is the server's: taskset execs the server in its
// own process, so the child is the server either way.
func serverPID(cmd *exec.Cmd) int { return cmd.Process.Pid }

// pinned returns the command args, run by taskset on cpu when cpu is not empty.
func pinned(ctx context.Context, cpu string, args []string) *exec.Cmd {
	if cpu != "" {
		args = append([]string{"taskset", "-c", cpu}, args...)
	}
	return exec.CommandContext(ctx, args[0], args[1:]...)
}

// startRedis starts a redis-server on a free loopback port, without persistence, pinned as
// the servers are, and returns its address.
func startRedis(ctx context.Context, cfg Config) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	_ = ln.Close()
	bin := cfg.RedisServer
	if bin == "" {
		bin = "redis-server"
	}
	cmd := pinned(ctx, cfg.ServerCPU, []string{bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no"})
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("e2e: redis-server: %w", err)
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	addr := "127.0.0.1:" + port
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	for start := time.Now(); rdb.Ping(ctx).Err() != nil; {
		if time.Since(start) > 10*time.Second {
			stop()
			return "", nil, errors.New("e2e: redis-server did not answer within 10 s")
		}
		time.Sleep(20 * time.Millisecond) // waiting for a process to start, not for time to pass
	}
	return addr, stop, nil
}

// processCPU returns the user and system time of process pid, from /proc (in clock ticks
// of 10 ms); 0 for pid 0.
func processCPU(pid int) (time.Duration, error) {
	if pid == 0 {
		return 0, nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("e2e: the server's CPU time: %w", err)
	}
	// Fields after the command name, which is in parentheses: state is field 3, utime 14,
	// stime 15.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("e2e: /proc/%d/stat: %d fields", pid, len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}

// Serve serves v on a loopback port, with the Redis at redisAddr for the redis backend:
// it prints "listening ADDR" on out and serves until in ends. It is the server side of
// Config.Server.
func Serve(variant, redisAddr string, in io.Reader, out io.Writer) error {
	v, err := ParseVariant(variant)
	if err != nil {
		return err
	}
	var rdb *redis.Client
	if v.Backend == "redis" {
		// As docs/redis.md says to build it, for every limiter: with ContextTimeoutEnabled
		// go-redis stops waiting at a context's deadline, so ours needs no guard goroutine.
		rdb = redis.NewClient(&redis.Options{Addr: redisAddr, PoolSize: 64, ContextTimeoutEnabled: true})
		defer rdb.Close()
	}
	h, closeLimiter, err := v.Handler(rdb)
	if err != nil {
		return err
	}
	defer closeLimiter()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(out, "listening %s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, in)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
