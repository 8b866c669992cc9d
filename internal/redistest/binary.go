package redistest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ServerEnv names the environment variable that chooses the server program every server of
// this package runs: a name looked up in PATH or a path, such as valkey-server for Valkey.
// Unset or empty, it is redis-server. The command-line client that joins a Cluster is the
// program of the same family beside it (valkey-cli for valkey-server), or redis-cli.
const ServerEnv = "REDISTEST_SERVER"

// serverBinary returns the path of the server program (see ServerEnv), failing the test when
// it is missing.
func serverBinary(tb testing.TB) string {
	tb.Helper()
	name := os.Getenv(ServerEnv)
	if name == "" {
		name = "redis-server"
	}
	return requireBinary(tb, name)
}

// cliBinary returns the path of the command-line client that goes with the server program
// at server: its name with "-server" made "-cli" if that program exists, or redis-cli.
func cliBinary(tb testing.TB, server string) string {
	tb.Helper()
	if base, ok := strings.CutSuffix(filepath.Base(server), "-server"); ok {
		if p, err := exec.LookPath(filepath.Join(filepath.Dir(server), base+"-cli")); err == nil {
			return p
		}
	}
	return requireBinary(tb, "redis-cli")
}

// requireBinary returns the path of the named program, failing the test when it is
// missing. Failing rather than skipping keeps a machine without Redis from passing the
// suite vacuously.
func requireBinary(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("redistest: %s not found in PATH; run \"make test\" (it installs it with apt-get) or install the redis-server package (%s=%q)",
			name, ServerEnv, os.Getenv(ServerEnv))
	}
	return path
}
