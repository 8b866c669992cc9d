package distributed

import (
	"embed"
	"fmt"
	"path"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts are assembled when the package loads from the .lua files beside this one and
// the fragments they share (fragments/*.lua): a line "-- @include NAME" stands for the
// fragment NAME. expand puts in every fragment but the clock, whose line stays until
// clocked puts in one of its variants: the Redis clock (clock.lua, the default) or the
// caller's (clock_client.lua, WithClientClock). A script on the Redis clock takes no
// argument for a clock it does not read. An include that names no fragment, or a clock
// included other than once, panics when the package loads, and so in every test.

//go:embed fragments/*.lua
var fragmentFiles embed.FS

// fragments holds each fragment's text by name ("args" for fragments/args.lua).
var fragments = readFragments()

// includeClock is the line expand leaves for clocked.
const includeClock = "-- @include clock\n"

// The variants of the clock fragment.
const (
	redisClock  = "clock"        // Redis TIME
	clientClock = "clock_client" // the caller's, in the last two arguments
	sharedClock = "clock_shared" // multi.lua's, read once for every bucket
)

func readFragments() map[string]string {
	entries, err := fragmentFiles.ReadDir("fragments")
	if err != nil {
		panic("distributed: " + err.Error())
	}
	m := make(map[string]string, len(entries))
	for _, e := range entries {
		b, err := fragmentFiles.ReadFile(path.Join("fragments", e.Name()))
		if err != nil {
			panic("distributed: " + err.Error())
		}
		m[strings.TrimSuffix(e.Name(), ".lua")] = string(b)
	}
	return m
}

// expand returns src with each include line but the clock's replaced by its fragment.
func expand(src string) string {
	var b strings.Builder
	for line := range strings.Lines(src) {
		name, ok := strings.CutPrefix(line, "-- @include ")
		name = strings.TrimSpace(name)
		switch {
		case !ok || name == redisClock:
			b.WriteString(line)
		case fragments[name] == "" || name == clientClock || name == sharedClock:
			panic("distributed: no fragment to include: " + name)
		default:
			b.WriteString(fragments[name])
		}
	}
	return b.String()
}

// clocked returns src, expanded, with its clock line replaced by the clock fragment named
// clock.
func clocked(src, clock string) string {
	if n := strings.Count(src, includeClock); n != 1 {
		panic(fmt.Sprintf("distributed: a script includes the clock %d times, want once", n))
	}
	return strings.Replace(src, includeClock, fragments[clock], 1)
}

// scriptPair is one script on each clock, the Redis clock's and the caller's, and their text.
type scriptPair struct {
	redis, client       *redis.Script
	redisSrc, clientSrc string
}

// newScriptPair returns src, expanded, on each clock.
func newScriptPair(src string) scriptPair {
	p := scriptPair{redisSrc: clocked(src, redisClock), clientSrc: clocked(src, clientClock)}
	p.redis, p.client = redis.NewScript(p.redisSrc), redis.NewScript(p.clientSrc)
	return p
}

// on returns the script that reads the clock of a limiter whose client clock is now (nil:
// the Redis clock).
func (p scriptPair) on(client bool) *redis.Script {
	if client {
		return p.client
	}
	return p.redis
}
