package rlsbench

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// The CPUs: Redis and the load on one, the server measured on the other.
const (
	loadCPU   = "0"
	serverCPU = "1"
)

// benchConfig is the domain of BenchmarkRLS: every limit out of reach but one value's, the
// hot over-limit key.
const benchConfig = `domain: bench
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: user
    value: hot
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: route
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
  - key: tenant
    rate_limit: {unit: hour, requests_per_unit: 1000000000}
`

// diffConfig is the domain of BenchmarkDifferential: under any run id, ten values of k with
// limits of 3 to 30 an hour, and g, out of reach.
func diffConfig() string {
	var b strings.Builder
	b.WriteString("domain: diff\ndescriptors:\n  - key: run\n    descriptors:\n")
	for i := range 10 {
		fmt.Fprintf(&b, "      - key: k\n        value: v%d\n        rate_limit: {unit: hour, requests_per_unit: %d}\n",
			i, 3*(i+1))
	}
	b.WriteString("      - key: g\n        rate_limit: {unit: hour, requests_per_unit: 1000000000}\n")
	return b.String()
}

// server is one rate-limit service process and a client of it.
type server struct {
	name   string
	cmd    *exec.Cmd
	conns  []*grpc.ClientConn
	client []pb.RateLimitServiceClient
}

// fleet is Redis and the servers every benchmark shares.
type fleet struct {
	dir     string
	redis   *exec.Cmd
	servers []*server // ours, reference, reference-cache
}

var (
	theFleet  *fleet
	fleetErr  error
	fleetOnce sync.Once
)

// getFleet builds and starts the fleet the first time a benchmark asks for it.
func getFleet(b *testing.B) *fleet {
	fleetOnce.Do(func() { theFleet, fleetErr = startFleet() })
	if fleetErr != nil {
		b.Fatal(fleetErr)
	}
	return theFleet
}

func TestMain(m *testing.M) {
	code := m.Run()
	if theFleet != nil {
		theFleet.stop()
	}
	os.Exit(code)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func startFleet() (*fleet, error) {
	dir, err := os.MkdirTemp("", "rlsbench")
	if err != nil {
		return nil, err
	}
	f := &fleet{dir: dir}
	ok := false
	defer func() {
		if !ok {
			f.stop()
		}
	}()
	configDir := filepath.Join(dir, "runtime", "ratelimit", "config")
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		return nil, err
	}
	for name, text := range map[string]string{"bench.yaml": benchConfig, "diff.yaml": diffConfig()} {
		if err := os.WriteFile(filepath.Join(configDir, name), []byte(text), 0o644); err != nil {
			return nil, err
		}
	}

	// The binaries: ours from this work tree, the reference from the module proxy.
	ours := filepath.Join(dir, "ratelimit-server")
	if err := f.run("..", nil, "go", "build", "-o", ours, "./cmd/ratelimit-server"); err != nil {
		return nil, err
	}
	if err := f.run(dir, []string{"GOBIN=" + dir}, "go", "install",
		"github.com/envoyproxy/ratelimit/src/service_cmd@"+ReferenceVersion); err != nil {
		return nil, err
	}

	redisPort, err := freePort()
	if err != nil {
		return nil, err
	}
	redisAddr := "127.0.0.1:" + strconv.Itoa(redisPort)
	f.redis = exec.Command("taskset", "-c", loadCPU, "redis-server", "--port", strconv.Itoa(redisPort),
		"--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := f.redis.Start(); err != nil {
		return nil, err
	}
	if err := waitRedis(redisAddr); err != nil {
		return nil, err
	}

	oursPort, oursHTTP, err := ports()
	if err != nil {
		return nil, err
	}
	if err := f.start("ours", nil, ours, "-config", configDir, "-redis", redisAddr,
		"-grpc-addr", "127.0.0.1:"+oursPort, "-http-addr", "127.0.0.1:"+oursHTTP,
		"-header-style", "none"); err != nil {
		return nil, err
	}
	for _, ref := range []struct {
		name  string
		extra []string
	}{
		{"reference", nil},
		{"reference-cache", []string{"LOCAL_CACHE_SIZE_IN_BYTES=16777216", "CACHE_KEY_PREFIX=cache:"}},
	} {
		grpcPort, httpPort, err := ports()
		if err != nil {
			return nil, err
		}
		debugPort, err := freePort()
		if err != nil {
			return nil, err
		}
		env := append([]string{
			"HOST=127.0.0.1", "GRPC_HOST=127.0.0.1", "DEBUG_HOST=127.0.0.1",
			"PORT=" + httpPort, "GRPC_PORT=" + grpcPort, "DEBUG_PORT=" + strconv.Itoa(debugPort),
			"USE_STATSD=false", "LOG_LEVEL=error", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr,
			"RUNTIME_ROOT=" + filepath.Join(dir, "runtime"), "RUNTIME_SUBDIRECTORY=ratelimit",
			"RUNTIME_WATCH_ROOT=false",
		}, ref.extra...)
		if err := f.start(ref.name, env, filepath.Join(dir, "service_cmd")); err != nil {
			return nil, err
		}
		f.servers[len(f.servers)-1].addr(grpcPort)
	}
	f.servers[0].addr(oursPort)
	for _, s := range f.servers {
		if err := s.connect(); err != nil {
			out, _ := os.ReadFile(filepath.Join(dir, s.name+".log"))
			return nil, fmt.Errorf("%s: %w\n%s", s.name, err, out)
		}
	}
	ok = true
	return f, nil
}

// waitRedis waits until Redis at addr answers a PING, for at most a minute: the reference
// exits when its first connection fails.
func waitRedis(addr string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, err = c.Write([]byte("PING\r\n"))
			buf := make([]byte, 7)
			if err == nil {
				_, err = io.ReadFull(c, buf)
			}
			_ = c.Close()
			if err == nil && string(buf) == "+PONG\r\n" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis at %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ports() (string, string, error) {
	a, err := freePort()
	if err != nil {
		return "", "", err
	}
	b, err := freePort()
	return strconv.Itoa(a), strconv.Itoa(b), err
}

// run runs a build step in dir, with env added to this process's.
func (f *fleet) run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// start starts a server process on the server CPU.
func (f *fleet) start(name string, env []string, bin string, args ...string) error {
	cmd := exec.Command("taskset", append([]string{"-c", serverCPU, bin}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	logs, err := os.Create(filepath.Join(f.dir, name+".log"))
	if err != nil {
		return err
	}
	defer logs.Close() // the process has its own descriptor
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return err
	}
	f.servers = append(f.servers, &server{name: name, cmd: cmd})
	return nil
}

func (f *fleet) stop() {
	for _, s := range f.servers {
		for _, c := range s.conns {
			_ = c.Close()
		}
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	if f.redis != nil && f.redis.Process != nil {
		_ = f.redis.Process.Kill()
		_ = f.redis.Wait()
	}
	_ = os.RemoveAll(f.dir)
}

func (f *fleet) server(name string) *server {
	for _, s := range f.servers {
		if s.name == name {
			return s
		}
	}
	panic("no server " + name)
}

// conns is how many connections the load spreads over.
const conns = 4

func (s *server) addr(port string) {
	for range conns {
		c, err := grpc.NewClient("127.0.0.1:"+port, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			panic(err)
		}
		s.conns = append(s.conns, c)
		s.client = append(s.client, pb.NewRateLimitServiceClient(c))
	}
}

// connect waits until the server answers a call, for at most a minute.
func (s *server) connect() error {
	req := &pb.RateLimitRequest{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "route", Value: "warm-up"}}},
	}}
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := s.client[0].ShouldRateLimit(ctx, req)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cpu returns the CPU time process pid used so far (user and system).
func cpu(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the command: state (0), ..., utime (11) and stime (12), in clock ticks of 10ms.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond, nil
}
