package redistest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ScriptCalls returns how many times the server has run a script (EVALSHA or EVAL) since it
// started or its statistics were last reset (CONFIG RESETSTAT).
func (s *Server) ScriptCalls() (int64, error) {
	reply, err := s.Do("INFO", "commandstats")
	if err != nil {
		return 0, err
	}
	text, _ := reply.(string)
	var n int64
	for line := range strings.Lines(text) {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		c, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("redistest: INFO commandstats: %q: %w", line, err)
		}
		n += c
	}
	return n, nil
}

// Main runs a package's tests with go-redis's logger silenced: tests that stop Redis make it
// log every failed dial. Call it from TestMain.
func Main(m *testing.M) {
	redis.SetLogger(quiet{})
	os.Exit(m.Run())
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
