package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	clusterMasters = 3
	clusterSlots   = 16384

	// defaultNodeTimeout is Redis's own default cluster-node-timeout: long
	// enough that a loaded test machine never makes a node look failed.
	defaultNodeTimeout = 5 * time.Second

	// createTimeout bounds redis-cli, which itself waits for the nodes to
	// agree on the configuration it hands out.
	createTimeout = 30 * time.Second
	// clusterReadyTimeout covers the gossip that follows until every node
	// sees the others and all slots, and every replica has synced.
	clusterReadyTimeout = 20 * time.Second
)

// Cluster is a Redis Cluster started for a test: three masters with the 16384
// slots split between them and, with WithReplicas, replicas of each.
type Cluster struct {
	cfg   clusterConfig
	nodes []*Server
}

// ClusterOption changes the cluster NewCluster builds.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	replicas    int
	nodeTimeout time.Duration
}

// WithReplicas gives every master n replicas. Default: 0, a cluster of three
// masters only.
func WithReplicas(n int) ClusterOption {
	return func(c *clusterConfig) { c.replicas = max(n, 0) }
}

// WithNodeTimeout sets the nodes' cluster-node-timeout, rounded down to the
// millisecond: how long a node may go unheard before the others count it as
// failing, after which a replica takes over its slots. Default: 5 s, Redis's
// own; a value below 1 ms means the default.
func WithNodeTimeout(d time.Duration) ClusterOption {
	return func(c *clusterConfig) {
		if d < time.Millisecond {
			d = defaultNodeTimeout
		}
		c.nodeTimeout = d
	}
}

// NewCluster starts a Redis Cluster of three masters (and the replicas
// WithReplicas asks for) on 127.0.0.1, joins them with redis-cli --cluster
// create, and returns once every node reports the cluster healthy with all
// slots assigned and every replica is in sync with its master. It fails tb if
// redis-server or redis-cli is not installed or the cluster does not form.
// Each node is stopped when tb's cleanups run.
func NewCluster(tb testing.TB, opts ...ClusterOption) *Cluster {
	tb.Helper()
	// Check both programs before starting anything, so a missing redis-cli
	// is reported as such rather than after three servers were started.
	cli := cliBinary(tb, serverBinary(tb))

	c := &Cluster{cfg: clusterConfig{nodeTimeout: defaultNodeTimeout}}
	for _, opt := range opts {
		opt(&c.cfg)
	}
	for range clusterMasters * (1 + c.cfg.replicas) {
		c.nodes = append(c.nodes, start(tb, freeClusterPort, c.cfg.role()))
	}
	c.create(tb, cli)
	if err := poll(clusterReadyTimeout, c.healthy); err != nil {
		tb.Fatalf("redistest: cluster %v did not become ready: %v", c.Addrs(), err)
	}
	return c
}

// Addrs returns the nodes' addresses, "127.0.0.1:PORT" each, in the order of
// Nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the cluster's nodes, masters and replicas alike. Stopping or
// killing one simulates a node failure; the cluster is not repaired
// afterwards, but a replica may take over (AwaitFailover).
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// role enables cluster mode. The node configuration file is named after the
// port so files from different nodes can never be confused.
func (cfg clusterConfig) role() role {
	return role{tail: func(port int, dir string) []string {
		return []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
			"--cluster-node-timeout", strconv.FormatInt(cfg.nodeTimeout.Milliseconds(), 10),
		}
	}}
}

func (c *Cluster) create(tb testing.TB, cli string) {
	tb.Helper()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(c.cfg.replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(tb.Context(), createTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create %v: %v\n%s", c.Addrs(), err, out)
	}
}

// healthy reports whether every node sees a working cluster of all the nodes
// with every slot assigned, in which every node knows every other's role, and
// whether every replica is in sync with its master. Checking each node, not
// just one, matters because a node that has not yet heard the others' gossip
// answers with errors, and a replica that masters do not know as one would not
// win their votes in a failover.
func (c *Cluster) healthy() (bool, error) {
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": strconv.Itoa(clusterSlots),
		"cluster_known_nodes":    strconv.Itoa(len(c.nodes)),
	}
	for _, n := range c.nodes {
		if n.hasExited() {
			return true, fmt.Errorf("node %s exited: %v", n.Addr(), n.cmd.ProcessState)
		}
		reply, err := n.Do("CLUSTER", "INFO")
		if err != nil {
			return false, fmt.Errorf("node %s: CLUSTER INFO: %w", n.Addr(), err)
		}
		info, _ := reply.(string)
		for key, value := range want {
			if got := infoField(info, key); got != value {
				return false, fmt.Errorf("node %s: %s is %q, want %q", n.Addr(), key, got, value)
			}
		}
		if c.cfg.replicas == 0 {
			continue
		}
		if err := c.rolesKnown(n); err != nil {
			return false, err
		}
		if err := inSync(n); err != nil {
			return false, err
		}
	}
	return true, nil
}

// rolesKnown checks that n's CLUSTER NODES lists three masters and their
// replicas, all connected and none flagged as failing or still handshaking.
func (c *Cluster) rolesKnown(n *Server) error {
	reply, err := n.Do("CLUSTER", "NODES")
	if err != nil {
		return fmt.Errorf("node %s: CLUSTER NODES: %w", n.Addr(), err)
	}
	text, _ := reply.(string)
	masters, replicas := 0, 0
	for line := range strings.Lines(text) {
		// <id> <addr> <flags> <master id> <ping> <pong> <epoch> <link> <slots>...
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		for flag := range strings.SplitSeq(f[2], ",") {
			switch flag {
			case "master":
				masters++
			case "slave":
				replicas++
			case "fail", "fail?", "handshake", "noaddr":
				return fmt.Errorf("node %s sees a node flagged %s", n.Addr(), f[2])
			}
		}
		if f[7] != "connected" {
			return fmt.Errorf("node %s: a link is %s", n.Addr(), f[7])
		}
	}
	if masters != clusterMasters || replicas != clusterMasters*c.cfg.replicas {
		return fmt.Errorf("node %s sees %d masters and %d replicas", n.Addr(), masters, replicas)
	}
	return nil
}

// inSync checks that n, if it is a replica, has finished its first sync and
// its link to its master is up.
func inSync(n *Server) error {
	reply, err := n.Do("INFO", "replication")
	if err != nil {
		return fmt.Errorf("node %s: INFO replication: %w", n.Addr(), err)
	}
	info, _ := reply.(string)
	if infoField(info, "role") == "slave" && infoField(info, "master_link_status") != "up" {
		return fmt.Errorf("replica %s: link to its master is %q", n.Addr(), infoField(info, "master_link_status"))
	}
	return nil
}

// MasterOf returns the node that serves key's slot, as the first live node
// that answers says (CLUSTER KEYSLOT, then CLUSTER SLOTS). It fails tb if no
// live node answers or the owner is none of the cluster's nodes.
func (c *Cluster) MasterOf(tb testing.TB, key string) *Server {
	tb.Helper()
	var errs []error
	for _, n := range c.live() {
		reply, err := n.Do("CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		slot, _ := reply.(int64)
		ranges, err := slotRanges(n)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range ranges {
			if r.first <= slot && slot <= r.last {
				if owner := c.node(r.port); owner != nil {
					return owner
				}
				tb.Fatalf("redistest: slot %d is served by port %d, none of %v", slot, r.port, c.Addrs())
			}
		}
		errs = append(errs, fmt.Errorf("node %s: slot %d is unassigned", n.Addr(), slot))
	}
	tb.Fatalf("redistest: no live node of %v says who serves a key: %v", c.Addrs(), errs)
	return nil
}

// AwaitFailover waits, up to timeout, until the nodes that are still running
// agree that the cluster works without those that have exited: every live
// node reports cluster_state ok and all 16384 slots served by live masters.
// It fails tb on timeout.
func (c *Cluster) AwaitFailover(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	err := poll(timeout, func() (bool, error) {
		for _, n := range c.live() {
			reply, err := n.Do("CLUSTER", "INFO")
			if err != nil {
				return false, fmt.Errorf("node %s: CLUSTER INFO: %w", n.Addr(), err)
			}
			info, _ := reply.(string)
			if state := infoField(info, "cluster_state"); state != "ok" {
				return false, fmt.Errorf("node %s: cluster_state is %q", n.Addr(), state)
			}
			ranges, err := slotRanges(n)
			if err != nil {
				return false, err
			}
			served := int64(0)
			for _, r := range ranges {
				if owner := c.node(r.port); owner == nil || owner.hasExited() {
					return false, fmt.Errorf("node %s: slots %d-%d are still served by port %d", n.Addr(), r.first, r.last, r.port)
				}
				served += r.last - r.first + 1
			}
			if served != clusterSlots {
				return false, fmt.Errorf("node %s: %d slots served", n.Addr(), served)
			}
		}
		return true, nil
	})
	if err != nil {
		tb.Fatalf("redistest: cluster %v did not fail over: %v", c.Addrs(), err)
	}
}

// live returns the nodes whose process is still running.
func (c *Cluster) live() []*Server {
	var out []*Server
	for _, n := range c.nodes {
		if !n.hasExited() {
			out = append(out, n)
		}
	}
	return out
}

// node returns the node listening on port, or nil.
func (c *Cluster) node(port int) *Server {
	for _, n := range c.nodes {
		if n.port == port {
			return n
		}
	}
	return nil
}

// slotRange is one entry of CLUSTER SLOTS: slots first to last, served by the
// master on port.
type slotRange struct {
	first, last int64
	port        int
}

func slotRanges(n *Server) ([]slotRange, error) {
	reply, err := n.Do("CLUSTER", "SLOTS")
	if err != nil {
		return nil, fmt.Errorf("node %s: CLUSTER SLOTS: %w", n.Addr(), err)
	}
	entries, _ := reply.([]any)
	out := make([]slotRange, 0, len(entries))
	for _, e := range entries {
		// [first, last, [ip, port, id, ...], replicas...]
		f, _ := e.([]any)
		if len(f) < 3 {
			return nil, fmt.Errorf("node %s: CLUSTER SLOTS entry %v", n.Addr(), e)
		}
		first, _ := f[0].(int64)
		last, _ := f[1].(int64)
		master, _ := f[2].([]any)
		if len(master) < 2 {
			return nil, fmt.Errorf("node %s: CLUSTER SLOTS entry %v", n.Addr(), e)
		}
		port, _ := master[1].(int64)
		out = append(out, slotRange{first: first, last: last, port: int(port)})
	}
	return out, nil
}
