package distributed

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

// fragmentRun runs src, a fragment followed by a return statement, on a fresh key k, with
// argv as ARGV.
type fragmentRun func(t *testing.T, src string, argv ...any) []any

func newFragmentRun(t *testing.T) (fragmentRun, *redistest.Server) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	return func(t *testing.T, src string, argv ...any) []any {
		t.Helper()
		v, err := client.Eval(context.Background(), src, []string{"k"}, argv...).Slice()
		require.NoError(t, err)
		return v
	}, server
}

// TestFragments runs each fragment on Redis alone, its definitions returned.
func TestFragments(t *testing.T) {
	run, server := newFragmentRun(t)

	t.Run("args", func(t *testing.T) {
		ret := "\nreturn {string.format('%.17g', rate), burst, cost, usable}"
		// Without a reserve the whole burst is usable; a reserve of 3 of 10 leaves 7.
		assert.Equal(t, []any{"0.5", int64(10), int64(2), int64(10)}, run(t, fragments["args"]+ret, "0.5", 10, 2))
		assert.Equal(t, []any{"0.5", int64(10), int64(2), int64(10)}, run(t, fragments["args"]+ret, "0.5", 10, 2, ""))
		assert.Equal(t, []any{"0.5", int64(10), int64(2), int64(7)}, run(t, fragments["args"]+ret, "0.5", 10, 2, "", 3))
		assert.Equal(t, []any{"0.5", int64(10), int64(2), int64(10)}, run(t, fragments["args"]+ret, "0.5", 10, 2, "", 0))
	})
	t.Run("clock", func(t *testing.T) {
		before := redisMicros(t, server)
		v := run(t, fragments["clock"]+"\nreturn {now_us, pad}")
		after := redisMicros(t, server)
		require.Len(t, v, 2)
		assert.GreaterOrEqual(t, v[0], before, "TIME, in µs since 2020")
		assert.LessOrEqual(t, v[0], after)
		assert.Equal(t, int64(0), v[1], "no pad on Redis's own clock")
	})
	t.Run("clock_client", func(t *testing.T) {
		// The last two arguments, whatever comes before them.
		ret := "\nreturn {now_us, pad}"
		assert.Equal(t, []any{int64(189388800000001), int64(1000)}, run(t, fragments["clock_client"]+ret, 189388800000001, 1000))
		assert.Equal(t, []any{int64(5), int64(6)}, run(t, fragments["clock_client"]+ret, 1, 2, 3, 4, 5, 6))
	})
	t.Run("clock_shared", func(t *testing.T) {
		// A bucket's function reads the script's instant and pad, and what it does to its own
		// copies stays its own.
		src := "local now_us, pad = 7, 8\nlocal function bucket()\n" + fragments["clock_shared"] +
			"now_us = now_us + 1\nreturn now_us + pad\nend\nreturn {bucket(), now_us, pad}"
		assert.Equal(t, []any{int64(16), int64(7), int64(8)}, run(t, src))
	})
	t.Run("tat", func(t *testing.T) {
		// rate 2/s at 1.5 s: now is 3 tokens. A stored TAT later than now and below 2^53 is
		// the bucket's; anything else is a full bucket, whose TAT is now.
		src := "local rate, now_us = 2, 1500000\n" + fragments["tat"] + "\nreturn {string.format('%.17g', now), string.format('%.17g', tat)}"
		for _, c := range []struct {
			stored []string // the command that writes k, or none
			tat    string
		}{
			{nil, "3"},
			{[]string{"SET", "k", "4.25"}, "4.25"},
			{[]string{"SET", "k", "3"}, "3"},
			{[]string{"SET", "k", "2.5"}, "3"},
			{[]string{"SET", "k", "2"}, "3"},
			{[]string{"SET", "k", "9007199254740992"}, "3"},
			{[]string{"SET", "k", "nan"}, "3"},
			{[]string{"SET", "k", "inf"}, "3"},
			{[]string{"SET", "k", "text"}, "3"},
			{[]string{"RPUSH", "k", "4"}, "3"},
		} {
			t.Run(fmt.Sprint(c.stored), func(t *testing.T) {
				_, err := server.Do("DEL", "k")
				require.NoError(t, err)
				if c.stored != nil {
					_, err := server.Do(c.stored...)
					require.NoError(t, err)
				}
				assert.Equal(t, []any{"3", c.tat}, run(t, src))
			})
		}
	})
	t.Run("keptat", func(t *testing.T) {
		// rate 2/s at 1.5 s: now is 3 tokens. A "TAT rate" value at the call's rate is its
		// TAT; at another rate its deficit carries (7 at 4/s is 1 ahead of 6: 4), and none is a
		// full bucket (5 at 4/s: now); anything else is none.
		src := "local rate, now_us = 2, 1500000\nlocal now = now_us * rate / 1000000\n" +
			"local stored = redis.pcall('GET', KEYS[1])\nlocal v\n" + fragments["keptat"] +
			"\nreturn v and string.format('%.17g', v) or 'none'"
		for stored, want := range map[string]string{
			"": "none", "5 2": "5", "7 4": "4", "5 4": "3", "5 0": "none", "5 2000000": "none",
			"5": "none", "text": "none",
		} {
			t.Run(stored, func(t *testing.T) {
				_, err := server.Do("DEL", "k")
				require.NoError(t, err)
				if stored != "" {
					_, err := server.Do("SET", "k", stored)
					require.NoError(t, err)
				}
				v, err := server.Do("EVAL", src, "1", "k")
				require.NoError(t, err)
				assert.Equal(t, want, v)
			})
		}
	})
	t.Run("window", func(t *testing.T) {
		// 2020-01-01 is 1577836800 s after 1970. With W = 7 µs, Unix µs 1577836800000010 is
		// 3 µs into window 225405257142858 (7 × 225405257142858 = 1577836800000006... + 4).
		src := "local now_us = tonumber(ARGV[5])\n" + fragments["window"] +
			"\nreturn {string.format('%.0f', now), elapsed, string.format('%d', index), left}"
		const now = 1577836800000010
		w := int64(7)
		want := []any{fmt.Sprint(now), int64(now % 7), fmt.Sprint(now / 7), w - now%7}
		assert.Equal(t, want, run(t, src, "", "", "", w, 10))
		// A window of an hour: 10 µs after a whole hour.
		hour := int64(3600000000)
		assert.Equal(t, []any{fmt.Sprint(now), int64(now % hour), fmt.Sprint(now / hour), hour - now%hour},
			run(t, src, "", "", "", hour, 10))
	})
}

// redisMicros reads Redis TIME in µs since 2020.
func redisMicros(t *testing.T, server *redistest.Server) int64 {
	t.Helper()
	v, err := server.Do("TIME")
	require.NoError(t, err)
	parts := v.([]any)
	var s, us int64
	_, err = fmt.Sscan(parts[0].(string)+" "+parts[1].(string), &s, &us)
	require.NoError(t, err)
	return (s-1577836800)*1000000 + us
}

// everyScript returns the text of every script the package runs, by name, on each clock.
func everyScript() map[string]string {
	m := map[string]string{}
	add := func(name string, p scriptPair) {
		m[name+"@redis"] = p.redisSrc
		m[name+"@client"] = p.clientSrc
	}
	for _, a := range algorithms {
		add(a.tag, a.scripts)
	}
	for _, a := range keepAlgorithms {
		add(a.tag, a.scripts)
	}
	add(warmup.tag, warmup.scripts)
	add(quotaTag, quotaScript)
	add(keepQuotaTag, keepQuotaScript)
	add("multi", multi)
	add(leaseTag, leaseScript)
	return m
}

// TestScriptsAssembled: every include is put in, the Redis clock's scripts read TIME and take
// no clock argument, the client clock's never read TIME.
func TestScriptsAssembled(t *testing.T) {
	scripts := everyScript()
	require.Len(t, scripts, 2*(5+5+1+2+1+1))
	for name, src := range scripts {
		assert.False(t, strings.Contains(src, "-- @include"), name)
		time, clientArgs := strings.Count(src, "redis.call('TIME')"), strings.Count(src, "ARGV[#ARGV")
		if strings.HasSuffix(name, "@redis") {
			assert.Equal(t, [2]int{1, 0}, [2]int{time, clientArgs}, name)
			assert.False(t, regexp.MustCompile(`ARGV\[[67]\]`).MatchString(src), name)
		} else {
			assert.Equal(t, [2]int{0, 2}, [2]int{time, clientArgs}, name)
		}
	}
}

// TestScriptsLuaPortable: the scripts run alike on Lua 5.1 (Redis, Valkey) and 5.4
// (Dragonfly), where string.format('%d', x) fails on a number that is not an integer (a
// float such as 3.0 passes only when the host converts it) and a float prints as "3.0": every
// %d formats a floored (or ceiled) value or a literal, nothing but strings is concatenated or
// passed to tostring, and every value SET writes is a string the script formatted (a number
// passed as it is is printed by the host: "3.0", or 14 digits).
func TestScriptsLuaPortable(t *testing.T) {
	t.Parallel()
	for name, src := range everyScript() {
		assert.Empty(t, luaPortability(src), name)
	}
	// The check finds what it looks for.
	for src, want := range map[string]string{
		"return string.format('%d:%d', math.floor(a), b)":          "%d of b",
		"return string.format('%.0f:%d', a, math.ceil(b))":         "",
		"return string.format('%d', 3)":                            "",
		"return 'n' .. n":                                          "n",
		"return tostring(n)":                                       "tostring(n)",
		"return 'tag ' .. tostring(ARGV[1]) -- a comment .. n":     "",
		"return '%d .. not code' .. 'x'":                           "",
		"return string.format('%d', (now - elapsed) / window)":     "%d of (now - elapsed) / window",
		"return string.format('%s %d', f(a, b), math.floor(c, d))": "",
		"redis.call('SET', KEYS[1], tat, 'PX', ttl)":               "SET of tat",
		"write('SET', key, string.format('%.17g', t), 'PX', ttl)":  "",
	} {
		got := strings.Join(luaPortability(src), "; ")
		if want == "" {
			assert.Empty(t, got, src)
		} else {
			assert.Contains(t, got, want, src)
		}
	}
}

var (
	luaComment = regexp.MustCompile(`--[^\n]*`)
	luaString  = regexp.MustCompile(`'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"`)
	luaConcat  = regexp.MustCompile(`([A-Za-z0-9_\[\]]+\)?)\s*\.\.\s*([A-Za-z0-9_\[\]]+\(?)`)
	luaToStr   = regexp.MustCompile(`tostring\(([^)]*)\)`)
	luaSet     = regexp.MustCompile(`(?:redis\.call|write)\('SET', [^,]+, ([^,)]+)`)
	integral   = regexp.MustCompile(`^(math\.floor\(|math\.ceil\(|[0-9]+$)`)
	argvOrKeys = regexp.MustCompile(`^(ARGV|KEYS)\[[^\]]*\]$`)
)

// luaPortability returns what in src would differ between Lua 5.1 and 5.4.
func luaPortability(src string) []string {
	var found []string
	// Formats first, on the source with its strings: each call's arguments, split at the
	// commas outside parentheses.
	for _, call := range strings.Split(src, "string.format(")[1:] {
		args := splitArgs(call)
		if len(args) == 0 || !luaString.MatchString(args[0]) {
			continue
		}
		verbs := regexp.MustCompile(`%[-0-9.]*[a-zA-Z]`).FindAllString(args[0], -1)
		for i, v := range verbs {
			if strings.HasSuffix(v, "d") && i+1 < len(args) && !integral.MatchString(args[i+1]) {
				found = append(found, "%d of "+args[i+1])
			}
		}
	}
	// Then the code alone: strings become S, comments go.
	code := luaString.ReplaceAllString(src, "S")
	code = luaComment.ReplaceAllString(code, "")
	code = strings.ReplaceAll(code, "...", "…")
	for _, m := range luaConcat.FindAllStringSubmatch(code, -1) {
		for _, operand := range m[1:] {
			if operand != "S" && !strings.HasPrefix(operand, "tostring(") {
				found = append(found, "concatenation of "+operand)
			}
		}
	}
	for _, m := range luaSet.FindAllStringSubmatch(src, -1) {
		if !strings.HasPrefix(m[1], "string.format(") && m[1] != "''" {
			found = append(found, "SET of "+m[1])
		}
	}
	for _, m := range luaToStr.FindAllStringSubmatch(code, -1) {
		if !argvOrKeys.MatchString(m[1]) {
			found = append(found, "tostring("+m[1]+")")
		}
	}
	return found
}

// splitArgs returns the arguments of the call whose text, after its opening parenthesis,
// is s, split at the commas outside parentheses, brackets and strings, trimmed.
func splitArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'', '"':
			if j := strings.IndexByte(s[i+1:], c); j >= 0 {
				i += j + 1
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return append(args, strings.TrimSpace(s[start:i]))
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return nil
}
