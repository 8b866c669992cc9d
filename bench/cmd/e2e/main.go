// Command e2e compares rate-limit middlewares end to end (see package e2e): it runs every
// variant, round by round, and prints one table per backend.
//
//	cd bench && go run ./cmd/e2e -rounds 3                        # everything, about 10 minutes
//	cd bench && go run ./cmd/e2e -key header -backend local -rounds 6
//
// On a machine with two CPUs or more it pins the servers (and redis-server) to -server-cpu
// and itself, the load generator, to -load-cpu, with taskset. E2E_CPUPROFILE=path writes
// a CPU profile of each server to path.<pid>.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/sluice-go/ratelimit/bench/e2e"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		fs := flag.NewFlagSet("serve", flag.ExitOnError)
		variant := fs.String("variant", "", "the variant to serve")
		redisAddr := fs.String("redis", "", "the Redis address of the redis backend")
		_ = fs.Parse(os.Args[2:])
		if path := os.Getenv("E2E_CPUPROFILE"); path != "" { // profile the server: path.<pid>
			f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
			if err == nil && pprof.StartCPUProfile(f) == nil {
				defer pprof.StopCPUProfile()
			}
		}
		if err := e2e.Serve(*variant, *redisAddr, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "e2e serve:", err)
			os.Exit(1)
		}
		return
	}
	var (
		cfg     = e2e.Config{Load: e2e.DefaultLoad, Log: os.Stderr}
		only    e2e.Variant
		loadCPU string
	)
	flag.StringVar(&only.Framework, "framework", "", "frameworks, comma-separated: gin, http (default all)")
	flag.StringVar(&only.Backend, "backend", "", "backends: local, redis (default all)")
	flag.StringVar(&only.Key, "key", "", "keys: ip, header (default all)")
	flag.StringVar(&only.Traffic, "traffic", "", "traffics: allow, deny (default all)")
	flag.StringVar(&only.Limiter, "limiter", "", "limiters: ours, ulule, httprate, sethvargo, tollbooth, none (default all)")
	flag.IntVar(&cfg.Rounds, "rounds", 3, "rounds")
	flag.IntVar(&cfg.Load.Conns, "conns", cfg.Load.Conns, "keep-alive connections")
	flag.IntVar(&cfg.Load.Users, "users", cfg.Load.Users, "X-User values of the header key")
	flag.DurationVar(&cfg.Load.Warmup, "warmup", cfg.Load.Warmup, "warm-up of each run")
	flag.DurationVar(&cfg.Load.Duration, "duration", cfg.Load.Duration, "measured time of each run")
	flag.StringVar(&cfg.ServerCPU, "server-cpu", "1", "the CPU of the servers and redis-server (\"\": not pinned)")
	flag.StringVar(&loadCPU, "load-cpu", "0", "the CPU of the load generator (\"\": not pinned)")
	flag.StringVar(&cfg.RedisServer, "redis-server", "redis-server", "the redis-server binary")
	flag.Parse()
	cfg.Only = only

	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
	_, noTaskset := exec.LookPath("taskset")
	if noTaskset != nil || runtime.NumCPU() < 2 {
		cfg.ServerCPU, loadCPU = "", ""
	}
	if loadCPU != "" && os.Getenv("E2E_PINNED") == "" {
		// Run again under taskset, so that every thread of the load generator is pinned.
		path, _ := exec.LookPath("taskset")
		args := append([]string{"taskset", "-c", loadCPU, self}, os.Args[1:]...)
		err := syscall.Exec(path, args, append(os.Environ(), "E2E_PINNED=1"))
		fmt.Fprintln(os.Stderr, "e2e: taskset:", err)
		os.Exit(1)
	}
	cfg.Server = []string{self, "serve"}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	samples, err := e2e.Run(ctx, cfg)
	e2e.Report(os.Stdout, samples)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		os.Exit(1)
	}
}
