package redistest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// startAttempts bounds the retries after losing a port to another
	// process between picking it and redis-server binding it.
	startAttempts = 5

	readyTimeout = 10 * time.Second
	probeTimeout = time.Second

	// logTailBytes is how much of a server's output a failure shows: enough
	// for the startup lines and the last complaint, not the whole history.
	logTailBytes = 4 << 10
)

// errPortInUse means the server lost the race for its port.
var errPortInUse = errors.New("port already in use")

// role is what a process's command line holds beyond the options every server
// gets, built from its port and directory: head, if not nil, comes first (a
// sentinel's configuration file, which it writes, and --sentinel); tail, if
// not nil, comes last (cluster or replication options). The zero role is a
// plain redis-server.
type role struct {
	head func(port int, dir string) ([]string, error)
	tail func(port int, dir string) []string
}

// start launches redis-server in role r on a port from pickPort, retrying
// with a new port while the chosen one turns out to be taken.
func start(tb testing.TB, pickPort func() (int, error), r role) *Server {
	tb.Helper()
	bin := serverBinary(tb)
	for attempt := 1; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			tb.Fatalf("redistest: pick a port: %v", err)
		}
		s, err := launch(tb, bin, port, r)
		if err == nil {
			tb.Cleanup(func() { s.cleanup(tb) })
			return s
		}
		if !errors.Is(err, errPortInUse) || attempt == startAttempts {
			tb.Fatalf("redistest: start redis-server on port %d (attempt %d): %v", port, attempt, err)
		}
	}
}

// launch starts one redis-server and waits until it is ready. On error the
// process has already been stopped.
func launch(tb testing.TB, bin string, port int, r role) (*Server, error) {
	dir := tb.TempDir()
	var args []string
	if r.head != nil {
		head, err := r.head(port, dir)
		if err != nil {
			return nil, err
		}
		args = head
	}
	logPath := filepath.Join(dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args = append(args,
		"--port", strconv.Itoa(port),
		"--bind", host,
		"--protected-mode", "no",
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		// A replica's first sync starts at once, not after the 5 s Redis 7 waits
		// by default for more replicas to share a diskless transfer.
		"--repl-diskless-sync-delay", "0",
	)
	if r.tail != nil {
		args = append(args, r.tail(port, dir)...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	// A file rather than a pipe: no copying goroutine to wait for, and the
	// log is still there to read after the process has died.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = procAttr()
	err = cmd.Start()
	logFile.Close() // the child has its own descriptor
	if err != nil {
		return nil, err
	}

	s := &Server{port: port, role: r, logPath: logPath, cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(s.exited)
	}()

	if err := poll(readyTimeout, s.ready); err != nil {
		s.Stop()
		if !errors.Is(err, errPortInUse) {
			err = fmt.Errorf("%w\n%s", err, s.logTail())
		}
		return nil, err
	}
	return s, nil
}

// ready reports whether this server, and not some other process that got the
// port, answers PING.
func (s *Server) ready() (bool, error) {
	if s.hasExited() {
		if s.logContains("Address already in use") {
			return true, errPortInUse
		}
		return true, fmt.Errorf("redis-server exited before it was ready: %v", s.cmd.ProcessState)
	}
	c, err := dial(s.Addr(), probeTimeout)
	if err != nil {
		return false, err
	}
	defer c.close()
	deadline := time.Now().Add(probeTimeout)
	pong, err := c.do(deadline, "PING")
	if err != nil {
		return false, err
	}
	if pong != "PONG" {
		return false, fmt.Errorf("PING answered %q", pong)
	}
	info, err := c.do(deadline, "INFO", "server")
	if err != nil {
		return false, err
	}
	text, _ := info.(string)
	if pid := infoField(text, "process_id"); pid != strconv.Itoa(s.cmd.Process.Pid) {
		// Someone else's server holds the port, and ours is about to exit
		// failing to bind it.
		return true, errPortInUse
	}
	return true, nil
}

// cleanup stops the server at the end of the test and, if the test failed,
// shows what the server logged, since that often explains the failure.
func (s *Server) cleanup(tb testing.TB) {
	s.Stop()
	if tb.Failed() {
		tb.Logf("redistest: redis-server on %s (pid %d) exited with %v\n%s",
			s.Addr(), s.cmd.Process.Pid, s.cmd.ProcessState, s.logTail())
	}
}

func (s *Server) logContains(text string) bool {
	b, err := os.ReadFile(s.logPath)
	return err == nil && bytes.Contains(b, []byte(text))
}

// logTail returns the end of the server's output, starting at a line
// boundary.
func (s *Server) logTail() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("--- redis-server log unavailable: %v ---", err)
	}
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return "--- redis-server log (tail) ---\n" + strings.TrimRight(string(b), "\n") + "\n--- end of log ---"
}

// infoField returns the value of key in the text of an INFO or CLUSTER INFO
// reply, or "" if it is absent.
func infoField(info, key string) string {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == key {
			return v
		}
	}
	return ""
}
