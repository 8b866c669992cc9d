package redistest

import (
	"errors"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// stopGrace is how long a server gets to exit on SIGTERM before it is
	// killed; without persistence it normally exits at once.
	stopGrace = 5 * time.Second

	dialTimeout    = 2 * time.Second
	commandTimeout = 5 * time.Second
)

// Server is one redis-server process started for a test. Its methods are safe
// for concurrent use.
type Server struct {
	port    int
	role    role
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd.Wait has returned

	stopOnce sync.Once

	mu   sync.Mutex
	conn *conn // reused by Do; nil until first use and after a broken exchange
}

// NewServer starts a redis-server on 127.0.0.1 for the duration of tb and
// returns once it answers PING. It fails tb if redis-server is not installed
// or does not come up. The server is stopped when tb's cleanups run.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	return start(tb, freePort, role{})
}

// NewServerArgs is NewServer with args appended to the server's command line, such as
// "--rename-command", "TIME", "" for a host that refuses a command.
func NewServerArgs(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return start(tb, freePort, role{tail: func(int, string) []string { return args }})
}

// Addr returns the server's address as "127.0.0.1:PORT".
func (s *Server) Addr() string {
	return net.JoinHostPort(host, strconv.Itoa(s.port))
}

// Port returns the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down now and waits for the process to exit, killing
// it if it has not exited within a few seconds. Clients then fail as they
// would if Redis went away mid-run. Stop may be called any number of times,
// from any goroutine.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		// An error means the process already exited, which is what we want.
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopGrace):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
	})
	s.dropConn()
}

// Kill ends the server at once with SIGKILL, as a crash or the kernel's OOM killer would:
// no shutdown, nothing said to its replicas, its sentinels or the rest of its cluster, and
// whatever it had not yet sent them is lost. It waits for the process to exit. Kill after
// Stop or Kill does nothing, and so does Stop after Kill.
func (s *Server) Kill() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
	})
	s.dropConn()
}

func (s *Server) dropConn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		s.conn.close()
		s.conn = nil
	}
}

// Restart stops s if it is still running, then starts a new, empty redis-server on the
// same port, with the same options, and returns it once it answers PING: to a client, Redis
// went away and came back without its data, as after a crash of a Redis that keeps nothing
// on disk (--save "" --appendonly no, as every server here). The new Server is stopped when
// tb's cleanups run; s stays stopped. Restart fails tb if the port was taken in the
// meantime.
func (s *Server) Restart(tb testing.TB) *Server {
	tb.Helper()
	s.Stop()
	return start(tb, func() (int, error) { return s.port, nil }, s.role)
}

// Do runs one command, such as Do("SET", "k", "v"), and returns its reply:
// string for simple and bulk strings, int64 for integers, []any for arrays,
// and nil for nil replies. An error reply is returned as a ReplyError. Each
// call is bounded by a deadline, so a dead server yields an error rather than
// a hung test. Calls are serialised on one connection, which is replaced after
// a network or protocol error.
func (s *Server) Do(args ...string) (any, error) {
	if len(args) == 0 {
		return nil, errors.New("redistest: Do needs a command")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		c, err := dial(s.Addr(), dialTimeout)
		if err != nil {
			return nil, err
		}
		s.conn = c
	}
	reply, err := s.conn.do(time.Now().Add(commandTimeout), args...)
	var replyErr ReplyError
	if err != nil && !errors.As(err, &replyErr) {
		s.conn.close()
		s.conn = nil
	}
	return reply, err
}

func (s *Server) hasExited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}
