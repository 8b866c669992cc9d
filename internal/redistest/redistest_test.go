package redistest_test

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

func TestServerRoundTrip(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)

	require.Equal(t, "127.0.0.1:"+strconv.Itoa(s.Port()), s.Addr())

	reply, err := s.Do("SET", "greeting", "hello\r\nworld")
	require.NoError(t, err)
	require.Equal(t, "OK", reply)

	reply, err = s.Do("GET", "greeting")
	require.NoError(t, err)
	require.Equal(t, "hello\r\nworld", reply)

	reply, err = s.Do("GET", "missing")
	require.NoError(t, err)
	require.Nil(t, reply)

	reply, err = s.Do("INCRBY", "counter", "41")
	require.NoError(t, err)
	require.Equal(t, int64(41), reply)

	_, err = s.Do("RPUSH", "list", "a", "", "c")
	require.NoError(t, err)
	reply, err = s.Do("LRANGE", "list", "0", "-1")
	require.NoError(t, err)
	require.Equal(t, []any{"a", "", "c"}, reply)
}

func TestServerErrorReply(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)

	_, err := s.Do("NOSUCHCOMMAND")
	var replyErr redistest.ReplyError
	require.ErrorAs(t, err, &replyErr)
	require.True(t, strings.HasPrefix(string(replyErr), "ERR "), "got %q", replyErr)

	// An error reply must not cost the connection.
	reply, err := s.Do("PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", reply)
}

func TestServerHasNoPersistence(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)

	reply, err := s.Do("CONFIG", "GET", "save")
	require.NoError(t, err)
	require.Equal(t, []any{"save", ""}, reply)

	reply, err = s.Do("CONFIG", "GET", "appendonly")
	require.NoError(t, err)
	require.Equal(t, []any{"appendonly", "no"}, reply)
}

func TestServersAreIndependent(t *testing.T) {
	t.Parallel()
	a := redistest.NewServer(t)
	b := redistest.NewServer(t)
	require.NotEqual(t, a.Port(), b.Port())

	_, err := a.Do("SET", "k", "a")
	require.NoError(t, err)
	reply, err := b.Do("GET", "k")
	require.NoError(t, err)
	require.Nil(t, reply)
}

func TestServerStop(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	_, err := s.Do("PING") // leaves a cached connection for Stop to break
	require.NoError(t, err)

	s.Stop()
	begin := time.Now()
	_, err = s.Do("PING")
	require.Error(t, err)
	_, err = s.Do("PING")
	require.Error(t, err)
	require.Less(t, time.Since(begin), 5*time.Second)

	s.Stop() // a second Stop, and the cleanup's, must be harmless
}

func TestServerRestart(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	_, err := s.Do("SET", "k", "v")
	require.NoError(t, err)

	again := s.Restart(t)
	require.Equal(t, s.Addr(), again.Addr())
	reply, err := again.Do("GET", "k")
	require.NoError(t, err)
	require.Nil(t, reply, "a restarted server starts empty")

	again.Stop()
	_, err = again.Do("PING")
	require.Error(t, err)
}

func TestServerStopIsSafeConcurrently(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)

	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			s.Stop()
		}()
	}
	for range 4 {
		<-done
	}
	_, err := s.Do("PING")
	require.Error(t, err)
}

// TestServerStoppedByCleanup: a server's process has ended once its test has. (Its port
// says nothing: a parallel test may have a new server on it already.)
func TestServerStoppedByCleanup(t *testing.T) {
	t.Parallel()
	var pid int
	t.Run("owner", func(t *testing.T) {
		info, err := redistest.NewServer(t).Do("INFO", "server")
		require.NoError(t, err)
		s, _ := info.(string)
		_, rest, ok := strings.Cut(s, "process_id:")
		require.True(t, ok, "INFO server without process_id: %q", s)
		pid, err = strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
		require.NoError(t, err)
	})

	err := syscall.Kill(pid, 0)
	require.ErrorIs(t, err, syscall.ESRCH, "redis-server (pid %d) still runs after its test ended", pid)
}

func TestCluster(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := redistest.NewCluster(t)
	t.Logf("cluster ready in %v", time.Since(begin))

	nodes := c.Nodes()
	require.Len(t, nodes, 3)
	addrs := c.Addrs()
	for i, n := range nodes {
		require.Equal(t, n.Addr(), addrs[i])
	}

	for _, n := range nodes {
		reply, err := n.Do("CLUSTER", "INFO")
		require.NoError(t, err)
		info, ok := reply.(string)
		require.True(t, ok, "CLUSTER INFO replied %T", reply)
		require.Contains(t, info, "cluster_state:ok\r\n")
		require.Contains(t, info, "cluster_known_nodes:3\r\n")
		require.Contains(t, info, "cluster_slots_assigned:16384\r\n")
	}

	const key = "ratelimit:{user-42}"
	owner := slotOwner(t, nodes[0], key)
	var ownerNode *redistest.Server
	for _, n := range nodes {
		if n.Port() == owner {
			ownerNode = n
			continue
		}
		// Every other node must redirect to the owner.
		_, err := n.Do("SET", key, "elsewhere")
		var replyErr redistest.ReplyError
		require.ErrorAs(t, err, &replyErr)
		require.True(t, strings.HasPrefix(string(replyErr), "MOVED "), "got %q", replyErr)
		require.True(t, strings.HasSuffix(string(replyErr), fmt.Sprintf(":%d", owner)), "got %q", replyErr)
	}
	require.NotNil(t, ownerNode, "slot owner port %d is not one of %v", owner, addrs)

	reply, err := ownerNode.Do("SET", key, "7")
	require.NoError(t, err)
	require.Equal(t, "OK", reply)
	reply, err = ownerNode.Do("GET", key)
	require.NoError(t, err)
	require.Equal(t, "7", reply)
}

// slotOwner returns the port of the node that serves key's slot, according to
// CLUSTER SLOTS as seen by n.
func slotOwner(t *testing.T, n *redistest.Server, key string) int {
	t.Helper()
	reply, err := n.Do("CLUSTER", "KEYSLOT", key)
	require.NoError(t, err)
	slot, ok := reply.(int64)
	require.True(t, ok, "CLUSTER KEYSLOT replied %T", reply)

	reply, err = n.Do("CLUSTER", "SLOTS")
	require.NoError(t, err)
	ranges, ok := reply.([]any)
	require.True(t, ok, "CLUSTER SLOTS replied %T", reply)
	for _, r := range ranges {
		// Each range is [start, end, [ip, port, id, ...], replicas...].
		fields := r.([]any)
		if fields[0].(int64) <= slot && slot <= fields[1].(int64) {
			return int(fields[2].([]any)[1].(int64))
		}
	}
	t.Fatalf("no node serves slot %d: %v", slot, ranges)
	return 0
}

// TestMissingBinaryFails checks that a machine without Redis gets a failed
// test with a hint, never a skip that would pass silently. It changes PATH,
// so it cannot run in parallel.
func TestMissingBinaryFails(t *testing.T) {
	server := cmp.Or(os.Getenv(redistest.ServerEnv), "redis-server")
	serverPath, err := exec.LookPath(server)
	require.NoError(t, err, "this test needs %s installed to build its PATH", server)

	t.Run("server", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		f := runExpectingFatal(t, func(tb testing.TB) { redistest.NewServer(tb) })
		require.Contains(t, f, "redistest: "+server+" not found in PATH")
		require.Contains(t, f, `run "make test"`)
	})

	t.Run("named by ServerEnv", func(t *testing.T) {
		t.Setenv(redistest.ServerEnv, "no-such-server")
		f := runExpectingFatal(t, func(tb testing.TB) { redistest.NewServer(tb) })
		require.Contains(t, f, "redistest: no-such-server not found in PATH")
	})

	t.Run("cluster without redis-cli", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Symlink(serverPath, filepath.Join(dir, filepath.Base(server))))
		t.Setenv("PATH", dir)
		f := runExpectingFatal(t, func(tb testing.TB) { redistest.NewCluster(tb) })
		require.Contains(t, f, "redistest: redis-cli not found in PATH")
	})
}

// fatalRecorder stands in for a testing.TB whose test is expected to stop,
// recording how it stopped instead of failing or skipping the real test.
type fatalRecorder struct {
	testing.TB
	fatal string
	skip  string
}

func (f *fatalRecorder) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) FailNow() { f.Fatalf("FailNow") }

func (f *fatalRecorder) Skip(args ...any) { f.Skipf("%s", fmt.Sprint(args...)) }

func (f *fatalRecorder) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (f *fatalRecorder) SkipNow() { f.Skipf("SkipNow") }

// runExpectingFatal runs fn on its own goroutine, as Fatalf ends the calling
// goroutine, and returns the message fn stopped with.
func runExpectingFatal(t *testing.T, fn func(testing.TB)) string {
	t.Helper()
	f := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	require.Empty(t, f.skip, "skipped instead of failing")
	require.NotEmpty(t, f.fatal, "returned instead of failing")
	return f.fatal
}

func TestServerKill(t *testing.T) {
	t.Parallel()
	s := redistest.NewServer(t)
	_, err := s.Do("PING")
	require.NoError(t, err)

	s.Kill()
	_, err = s.Do("PING")
	require.Error(t, err)
	s.Kill() // as harmless as a second Stop
	s.Stop()
}

// TestClusterFailover: a master of a cluster with replicas is killed, and its replica takes
// over its slots, with the data it had replicated.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	c := redistest.NewCluster(t, redistest.WithReplicas(1), redistest.WithNodeTimeout(500*time.Millisecond))
	t.Logf("cluster of %d nodes ready in %v", len(c.Nodes()), time.Since(begin))
	require.Len(t, c.Nodes(), 6)

	const key = "{user-42}"
	master := c.MasterOf(t, key)
	_, err := master.Do("SET", key, "7")
	require.NoError(t, err)
	// WAIT returns once the replica has the write: the failover must keep it.
	reply, err := master.Do("WAIT", "1", "5000")
	require.NoError(t, err)
	require.Equal(t, int64(1), reply)

	master.Kill()
	killed := time.Now()
	c.AwaitFailover(t, 20*time.Second)
	t.Logf("failed over in %v", time.Since(killed))
	promoted := c.MasterOf(t, key)
	require.NotEqual(t, master.Port(), promoted.Port())
	reply, err = promoted.Do("GET", key)
	require.NoError(t, err)
	require.Equal(t, "7", reply)
}

// TestSentinelFailover: the master watched by the sentinels is killed, and the sentinels
// promote its replica, with the data it had replicated.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	begin := time.Now()
	s := redistest.NewSentinel(t)
	t.Logf("sentinels ready in %v", time.Since(begin))
	require.Len(t, s.SentinelAddrs(), 3)

	master, replica := s.Master(t), s.Replica(t)
	require.NotEqual(t, master.Port(), replica.Port())
	_, err := master.Do("SET", "k", "7")
	require.NoError(t, err)
	reply, err := master.Do("WAIT", "1", "5000")
	require.NoError(t, err)
	require.Equal(t, int64(1), reply)

	master.Kill()
	killed := time.Now()
	promoted := s.AwaitFailover(t, master, 20*time.Second)
	t.Logf("failed over in %v", time.Since(killed))
	require.Equal(t, replica.Port(), promoted.Port())
	require.Equal(t, promoted, s.Master(t))
	reply, err = promoted.Do("GET", "k")
	require.NoError(t, err)
	require.Equal(t, "7", reply)
}

// TestServerEnv: the server ServerEnv names is the one that runs, with the command-line
// client of its family for a Cluster.
func TestServerEnv(t *testing.T) {
	t.Setenv(redistest.ServerEnv, "valkey-server")
	info, err := redistest.NewServer(t).Do("INFO", "server")
	require.NoError(t, err)
	require.Contains(t, info, "valkey_version:")
	c := redistest.NewCluster(t)
	info, err = c.Nodes()[0].Do("INFO", "server")
	require.NoError(t, err)
	require.Contains(t, info, "valkey_version:")
}
