package redistest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	// SentinelMasterName is the name under which the sentinels of NewSentinel
	// watch their master: FailoverOptions.MasterName for go-redis.
	SentinelMasterName = "redistest"

	sentinels      = 3
	sentinelQuorum = 2

	// SentinelDownAfter is the sentinels' down-after-milliseconds: how long
	// the master may go unheard before a sentinel counts it as down. A quorum
	// of two then agrees, elects a leader, and the leader promotes the
	// replica, which takes a second or two more.
	SentinelDownAfter = 500 * time.Millisecond
	// sentinelFailoverTimeout is the sentinels' failover-timeout. It also
	// spaces the elections: after one ends without a leader, the next comes
	// twice this later.
	sentinelFailoverTimeout = 2 * time.Second

	// sentinelReadyTimeout covers the replica's first sync and the sentinels'
	// discovery of the replica and of each other, from the hello messages
	// each sends every two seconds.
	sentinelReadyTimeout = 20 * time.Second
)

// Sentinel is a replicated Redis watched by Redis Sentinel, started for a
// test: a master, one replica, and three sentinels, which agree (a quorum of
// two) that the master is down once it has gone unheard for SentinelDownAfter,
// and then promote the replica.
type Sentinel struct {
	data      []*Server // the master, then its replica, as started
	sentinels []*Server
}

// NewSentinel starts a master, a replica of it and three sentinels on
// 127.0.0.1, and returns once the replica is in sync and every sentinel knows
// the master, the replica and the two other sentinels, so that a failover
// can happen from then on. The sentinels run redis-server in sentinel mode
// (redis-server CONF --sentinel, which is what Debian's redis-sentinel
// package runs too). Every process is stopped when tb's cleanups run.
func NewSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	master := start(tb, freePort, role{})
	replicaOf := role{tail: func(int, string) []string {
		return []string{"--replicaof", host, strconv.Itoa(master.port)}
	}}
	s := &Sentinel{data: []*Server{master, start(tb, freePort, replicaOf)}}
	watch := role{head: func(port int, dir string) ([]string, error) {
		// A sentinel rewrites its configuration file as it learns: it must be
		// a file of its own, writable.
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("sentinel monitor %[1]s %[2]s %[3]d %[4]d\n"+
			"sentinel down-after-milliseconds %[1]s %[5]d\n"+
			"sentinel failover-timeout %[1]s %[6]d\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			SentinelMasterName, host, master.port, sentinelQuorum,
			SentinelDownAfter.Milliseconds(), sentinelFailoverTimeout.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, err
		}
		return []string{conf, "--sentinel"}, nil
	}}
	for range sentinels {
		s.sentinels = append(s.sentinels, start(tb, freePort, watch))
	}
	if err := poll(sentinelReadyTimeout, s.ready); err != nil {
		tb.Fatalf("redistest: sentinels %v did not become ready: %v", s.SentinelAddrs(), err)
	}
	return s
}

// SentinelAddrs returns the sentinels' addresses, "127.0.0.1:PORT" each:
// FailoverOptions.SentinelAddrs for go-redis.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Sentinels returns the sentinel processes.
func (s *Sentinel) Sentinels() []*Server {
	return append([]*Server(nil), s.sentinels...)
}

// Master returns the server the first live sentinel names as master now. It
// fails tb if no sentinel answers, or names a server that is not one of the
// two data servers.
func (s *Sentinel) Master(tb testing.TB) *Server {
	tb.Helper()
	var errs []error
	for _, n := range s.sentinels {
		if n.hasExited() {
			continue
		}
		m, err := s.masterOf(n)
		if err == nil {
			return m
		}
		errs = append(errs, err)
	}
	tb.Fatalf("redistest: no sentinel of %v names a master: %v", s.SentinelAddrs(), errs)
	return nil
}

// Replica returns the data server that is not master, as Master sees it.
func (s *Sentinel) Replica(tb testing.TB) *Server {
	tb.Helper()
	if s.Master(tb) == s.data[0] {
		return s.data[1]
	}
	return s.data[0]
}

// AwaitFailover waits, up to timeout, until every live sentinel names a live
// master other than old, and that server says it is a master. It returns the
// new master, and fails tb on timeout.
func (s *Sentinel) AwaitFailover(tb testing.TB, old *Server, timeout time.Duration) *Server {
	tb.Helper()
	var promoted *Server
	err := poll(timeout, func() (bool, error) {
		promoted = nil
		for _, n := range s.sentinels {
			if n.hasExited() {
				continue
			}
			m, err := s.masterOf(n)
			switch {
			case err != nil:
				return false, err
			case m == old || m.hasExited():
				return false, fmt.Errorf("sentinel %s names %s, which is gone", n.Addr(), m.Addr())
			case promoted != nil && m != promoted:
				return false, fmt.Errorf("sentinels name %s and %s", promoted.Addr(), m.Addr())
			}
			promoted = m
		}
		if promoted == nil {
			return true, fmt.Errorf("every sentinel has exited")
		}
		reply, err := promoted.Do("INFO", "replication")
		if err != nil {
			return false, err
		}
		if r := infoField(reply.(string), "role"); r != "master" {
			return false, fmt.Errorf("%s is still a %s", promoted.Addr(), r)
		}
		return true, nil
	})
	if err != nil {
		tb.Fatalf("redistest: sentinels %v did not fail over: %v", s.SentinelAddrs(), err)
	}
	return promoted
}

// masterOf returns the data server sentinel n names as master.
func (s *Sentinel) masterOf(n *Server) (*Server, error) {
	reply, err := n.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMasterName)
	if err != nil {
		return nil, fmt.Errorf("sentinel %s: %w", n.Addr(), err)
	}
	addr, _ := reply.([]any)
	if len(addr) != 2 {
		return nil, fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME replied %v", n.Addr(), reply)
	}
	ip, _ := addr[0].(string)
	port, _ := addr[1].(string)
	for _, d := range s.data {
		if net.JoinHostPort(ip, port) == d.Addr() {
			return d, nil
		}
	}
	return nil, fmt.Errorf("sentinel %s names %s:%s, not one of ours", n.Addr(), ip, port)
}

// ready reports whether the replica is in sync and every sentinel sees the
// master up, with one replica and two other sentinels.
func (s *Sentinel) ready() (bool, error) {
	for _, n := range append(s.Sentinels(), s.data...) {
		if n.hasExited() {
			return true, fmt.Errorf("%s exited: %v", n.Addr(), n.cmd.ProcessState)
		}
	}
	if err := inSync(s.data[1]); err != nil {
		return false, err
	}
	want := map[string]string{
		"flags":               "master",
		"num-slaves":          "1",
		"num-other-sentinels": strconv.Itoa(sentinels - 1),
	}
	for _, n := range s.sentinels {
		reply, err := n.Do("SENTINEL", "MASTER", SentinelMasterName)
		if err != nil {
			return false, fmt.Errorf("sentinel %s: %w", n.Addr(), err)
		}
		fields := pairs(reply)
		for k, v := range want {
			if fields[k] != v {
				return false, fmt.Errorf("sentinel %s: %s is %q, want %q", n.Addr(), k, fields[k], v)
			}
		}
	}
	return true, nil
}

// pairs reads a flat array of names and values, as SENTINEL MASTER replies.
func pairs(reply any) map[string]string {
	a, _ := reply.([]any)
	m := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		k, _ := a[i].(string)
		v, _ := a[i+1].(string)
		m[k] = v
	}
	return m
}
