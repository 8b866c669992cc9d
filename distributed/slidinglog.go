package distributed

import (
	_ "embed"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

//go:embed slidinglog.lua
var slidingLogFile string

var slidingLogSource = expand(slidingLogFile)

// slidingLogArgs appends the script's ARGV[5], the window in whole microseconds, from the
// same function the local backend uses. The limit has passed check, so it has a window.
func slidingLogArgs(argv []any, limit ratelimit.Limit) []any {
	w, _ := args.LogWindow(limit)
	return append(argv, w)
}
