package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

const (
	clusterSize  = 3
	clusterSlots = 16384

	// createTimeout bounds redis-cli, which itself waits for the nodes to
	// agree on the configuration it hands out.
	createTimeout = 30 * time.Second
	// clusterReadyTimeout covers the gossip that follows until every node
	// sees the others and all slots.
	clusterReadyTimeout = 20 * time.Second
)

// Cluster is a three-node Redis Cluster started for a test, with the 16384
// slots split between the nodes and no replicas.
type Cluster struct {
	nodes []*Server
}

// NewCluster starts three cluster-enabled redis-server processes on
// 127.0.0.1, joins them with redis-cli --cluster create, and returns once
// every node reports the cluster healthy with all slots assigned. It fails tb
// if redis-server or redis-cli is not installed or the cluster does not form.
// Each node is stopped when tb's cleanups run.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	// Check both programs before starting anything, so a missing redis-cli
	// is reported as such rather than after three servers were started.
	requireBinary(tb, "redis-server")
	cli := requireBinary(tb, "redis-cli")

	c := &Cluster{}
	for range clusterSize {
		c.nodes = append(c.nodes, start(tb, freeClusterPort, clusterArgs))
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

// Nodes returns the cluster's nodes. Stopping one simulates a node failure;
// the cluster is not repaired afterwards.
func (c *Cluster) Nodes() []*Server {
	return append([]*Server(nil), c.nodes...)
}

// clusterArgs enables cluster mode. The node configuration file is named
// after the port so files from different nodes can never be confused.
func clusterArgs(port int, dir string) []string {
	return []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", port)),
		"--cluster-node-timeout", "5000",
	}
}

func (c *Cluster) create(tb testing.TB, cli string) {
	tb.Helper()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	ctx, cancel := context.WithTimeout(tb.Context(), createTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		tb.Fatalf("redistest: redis-cli --cluster create %v: %v\n%s", c.Addrs(), err, out)
	}
}

// healthy reports whether every node sees a working cluster of all the nodes
// with every slot assigned. Checking each node, not just one, matters because
// a node that has not yet heard the others' gossip answers with errors.
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
	}
	return true, nil
}
