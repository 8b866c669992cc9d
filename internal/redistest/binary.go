package redistest

import (
	"os/exec"
	"testing"
)

// requireBinary returns the path of the named Redis program, failing the test
// when it is missing. Failing rather than skipping keeps a machine without
// Redis from passing the suite vacuously.
func requireBinary(tb testing.TB, name string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		tb.Fatalf("redistest: %s not found in PATH; run \"make test\" (it installs it with apt-get) or install the redis-server package", name)
	}
	return path
}
