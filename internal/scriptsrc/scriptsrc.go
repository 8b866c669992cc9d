// Package scriptsrc gives the text of a go-redis Script to the Redis backends' Client seam,
// which runs a script by its hash and, when the server has not got it, by its text.
package scriptsrc

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"sync"

	"github.com/redis/go-redis/v9"
)

// texts holds the text of each script asked for, by script.
var texts sync.Map // *redis.Script → string

// Of returns script's text. A redis.Script gives its text only to a redis.Scripter's
// ScriptLoad, so Of loads it once into one that keeps the text and runs nothing.
func Of(script *redis.Script) string {
	if src, ok := texts.Load(script); ok {
		return src.(string)
	}
	var c keeper
	_ = script.Load(context.Background(), &c)
	texts.Store(script, c.src)
	return c.src
}

// keeper is a redis.Scripter whose ScriptLoad keeps the script's text. It answers with the
// text's SHA-1, as Redis would: Script.Load stores the answer as the script's hash, and any
// other answer would turn every later EVALSHA of that script into a NOSCRIPT and an EVAL.
type keeper struct {
	redis.Scripter // nil: only ScriptLoad is called
	src            string
}

func (c *keeper) ScriptLoad(_ context.Context, src string) *redis.StringCmd {
	c.src = src
	sum := sha1.Sum([]byte(src))
	return redis.NewStringResult(hex.EncodeToString(sum[:]), nil)
}
