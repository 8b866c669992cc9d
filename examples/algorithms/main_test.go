package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// The token bucket's answers to the trace, derived by hand. PerSecond(10): the bucket holds up
// to 10 tokens, gains one every 100 ms, starts full, and a request takes one token if there is
// one. Write B for the bound a phase puts on A, the number admitted before a request: the
// request is admitted iff tokens = start + gained - A ≥ 1, that is A ≤ B.
//
// Steady, 57 requests at k·71 ms, k = 0…56, from a full bucket: B_k = 9 + 0.71k. While every
// request is admitted A = k, so k ≤ 9 + 0.71k holds up to k = 31 (0.29·31 = 8.99) and
// fails at k = 32 (9.28): 32 admitted. From there each request is admitted exactly when
// ⌊B⌋ has moved up since the one before, so A = ⌊B⌋ + 1 after each request: after k = 56,
// ⌊9 + 39.76⌋ + 1 = 49 admitted, 8 denied. (B is a whole number only when 71k is a multiple
// of 100, k = 0 here, so no decision rests on a tie or on float rounding.)
//
// The bucket then has 10 + 39.76 - 49 = 0.76 tokens at 3.976 s and is full again at 4.900 s.
//
// Burst, 20 requests at 4.950 s + 5j ms: B_j = 9 + 0.05j, so j ≤ 9 + 0.05j up to j = 9
// (0.95·9 = 8.55) and the 10 requests before 5 s are admitted, leaving 10 + 0.45 - 10 = 0.45
// tokens at 4.995 s. The 10 after 5 s find 0.50 … 0.95 tokens: all denied.
//
// Steady again, 36 requests at 5.5 s + m·71 ms, m = 0…35: the bucket holds 0.45 + 5.05 = 5.5
// tokens at 5.5 s, so B_m = 4.5 + 0.71m. m ≤ 4.5 + 0.71m up to m = 15 (0.29·15 = 4.35), not at
// m = 16 (4.64): then A = ⌊B⌋ + 1 as before, ⌊4.5 + 24.85⌋ + 1 = 30 after m = 35, 6 denied.
// (4.5 + 0.71m is whole first at m = 50.)
var tokenBucketByPhase = []struct{ admitted, denied int }{{49, 8}, {10, 10}, {30, 6}}

func TestTokenBucketTrace(t *testing.T) {
	at := arrivals()
	require.Len(t, at, 57+20+36)
	ds, err := play(ratelimit.TokenBucket, at)
	require.NoError(t, err)

	i := 0
	for n, p := range phases {
		admitted := 0
		for _, d := range ds[i : i+p.count] {
			if d.allowed {
				admitted++
			}
			assert.Zero(t, d.delay, "a token bucket polices: it never delays")
		}
		assert.Equal(t, tokenBucketByPhase[n].admitted, admitted, "phase %d admitted", n)
		assert.Equal(t, tokenBucketByPhase[n].denied, p.count-admitted, "phase %d denied", n)
		i += p.count
	}

	// The most in one aligned second is the first, [0, 1 s): 15 requests arrive (0 … 994 ms),
	// all admitted. The most in any second ends at 5.926 s (m = 6): the 10 of the burst from
	// 4.950 s and the 7 steady ones from 5.5 s, 17 — within the token bucket's bound of
	// Burst + Rate·d = 10 + 10·0.976 for the 0.976 s from the first to the last, and above the
	// Burst of any W-long window that only the sliding window log guarantees.
	assert.Equal(t, summary{admitted: 89, denied: 24, maxSliding: 17, maxAligned: 15,
		minGap: 5 * time.Millisecond}, summarize(ds, window(traceLimit)))
}

// TestGenerate runs the program as `go run . -out DIR` would: every algorithm either has its
// PNG or is reported as skipped, and the token bucket's line carries the figures above.
func TestGenerate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "img")
	var out bytes.Buffer
	require.NoError(t, generate(&out, dir))
	text := out.String()

	assert.Regexp(t, `(?m)^\s+TokenBucket\s+89\s+24\s+17\s+15\s+0s\s+5ms\s*$`, text)
	for _, alg := range algorithms {
		name := filepath.Join(dir, strings.ToLower(alg.String())+".png")
		_, err := os.Stat(name)
		if strings.Contains(text, "skipped "+alg.String()+": not implemented") {
			assert.ErrorIs(t, err, os.ErrNotExist, "%v was skipped but has a PNG", alg)
		} else {
			assert.NoError(t, err, "%v is neither drawn nor reported as skipped", alg)
		}
	}
	decodePNG(t, filepath.Join(dir, "algorithms.png"))
	decodePNG(t, filepath.Join(dir, "warmup.png"))
	assert.Contains(t, text, "  warm-up  [20 4 5 6 6 7 8 8 9 10 10 10 10 10 10 10 10 10 10 10], 183 in all\n")
}

// TestColdStart: the warm bucket admits what the conformance suite's ColdStartRamp rule
// says (ratelimittest/warmup.go derives it): τ(0) = 16 at once, then the ramp of the
// warm clock, 3.67 to 10 per 100 ms, then 10. The plain bucket admits its burst of 50 and
// the 10 tokens it earns meanwhile, less the one that is not there yet at 99 ms: 59, then
// 10 per 100 ms. The warm one is behind it at every millisecond.
func TestColdStart(t *testing.T) {
	cs, err := playColdStart()
	require.NoError(t, err)
	assert.Equal(t, []int{20, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, perBin(cs.warm))
	assert.Equal(t, []int{59, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}, perBin(cs.plain))
	for i, at := range cs.warm {
		assert.GreaterOrEqual(t, at, cs.plain[i], "the warm bucket admitted its request %d before the plain one", i)
	}
	var buf bytes.Buffer
	require.NoError(t, writeColdStart(&buf, cs))
	img := decodeBytes(t, buf.Bytes())
	assert.Equal(t, 768, img.Bounds().Dx())
	assert.True(t, has(img, green), "no warm-up line")
}

func TestWriteFigure(t *testing.T) {
	ds, err := play(ratelimit.TokenBucket, arrivals())
	require.NoError(t, err)

	t.Run("policer", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, writeFigure(&buf, outcome{alg: ratelimit.TokenBucket, decisions: ds}))
		img := decodeBytes(t, buf.Bytes())
		assert.Equal(t, 768, img.Bounds().Dx(), "8 in at 96 dpi")
		assert.Equal(t, 240, img.Bounds().Dy(), "2.5 in at 96 dpi")
		assert.True(t, has(img, green), "no admitted mark")
		assert.True(t, has(img, red), "no denied mark")
		assert.False(t, has(img, blue), "a departure mark on a policer")
	})

	t.Run("shaper", func(t *testing.T) {
		// The leaky bucket admits what the token bucket admits and delays each request
		// until T = 100 ms after the one before it leaves: a stand-in until the local
		// backend implements it, to draw the departures lane.
		var buf bytes.Buffer
		require.NoError(t, writeFigure(&buf, outcome{alg: ratelimit.LeakyBucket, decisions: shape(ds)}))
		img := decodeBytes(t, buf.Bytes())
		assert.Equal(t, 768, img.Bounds().Dx())
		assert.Equal(t, 374, img.Bounds().Dy(), "(2.5 + 1.4) in at 96 dpi")
		assert.True(t, has(img, blue), "no departure mark")
	})

	t.Run("comparison", func(t *testing.T) {
		var buf bytes.Buffer
		require.NoError(t, writeComparison(&buf, []outcome{
			{alg: ratelimit.TokenBucket, decisions: ds},
			{alg: ratelimit.LeakyBucket, decisions: shape(ds)},
		}))
		img := decodeBytes(t, buf.Bytes())
		assert.Equal(t, 768, img.Bounds().Dx())
		assert.Equal(t, 322, img.Bounds().Dy(), "(2·1.5 + 0.35) in at 96 dpi, rounded")
		assert.Error(t, writeComparison(&buf, nil))
	})
}

// shape gives the admitted requests of ds the delays of a leaky bucket of traceLimit: each
// leaves at the later of its arrival and T after the one before it.
func shape(ds []decision) []decision {
	const T = 100 * time.Millisecond
	out := make([]decision, len(ds))
	free := time.Duration(-1 << 62) // when the next request may leave
	for i, d := range ds {
		out[i] = d
		if d.allowed {
			leave := max(d.at, free)
			out[i].delay = leave - d.at
			free = leave + T
		}
	}
	return out
}

func decodePNG(t *testing.T, name string) image.Image {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return decodeBytes(t, b)
}

func decodeBytes(t *testing.T, b []byte) image.Image {
	t.Helper()
	require.NotEmpty(t, b)
	img, err := png.Decode(bytes.NewReader(b))
	require.NoError(t, err)
	return img
}

// has reports whether some pixel of img is exactly c.
func has(img image.Image, c color.RGBA) bool {
	r0, g0, b0, a0 := c.RGBA()
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			if r, g, b, a := img.At(x, y).RGBA(); r == r0 && g == g0 && b == b0 && a == a0 {
				return true
			}
		}
	}
	return false
}

// TestOverload: the overload of overload.go, derived by hand. Critical and normal requests,
// 60 and 75 of them in 3 s, never find fewer than 25 tokens (the sheddable reserve, which
// they may spend: 5 more than normal ones keep back), so all pass. The flood takes whatever
// is above 25: the bucket, which starts with 50 and gains 0.1 a millisecond, 299.9 by the
// last one, ends between 25 and 26 tokens, so 50 + 299.9 − 324 = 25.9 after 324 admissions
// in all, 324 − 60 − 75 = 189 of them sheddable. Never more than Burst + Rate·t.
func TestOverload(t *testing.T) {
	o, err := playOverload()
	require.NoError(t, err)
	assert.Equal(t, []int{60, 75, 189}, []int{len(o.admitted[priority.Critical]), len(o.admitted[priority.Normal]),
		len(o.admitted[priority.Sheddable])})
	assert.Equal(t, [3]int{0, 0, 3000 - 189}, o.denied)
	last := o.level[len(o.level)-1]
	assert.Equal(t, 25.0, last.Y, "whole tokens held at the end")
	for _, pt := range o.level[1:] {
		// The flood stops at its reserve, 25; the others take one token from it at a time,
		// two when a normal and a critical request come in the same millisecond (every
		// 200 ms), and 0.1 comes back each millisecond.
		require.GreaterOrEqual(t, pt.Y, 23.0)
	}
}
