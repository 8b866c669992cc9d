package pipeline_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// TestAppendDeniedBody: the denial's body written by hand is the one json.Marshal writes.
func TestAppendDeniedBody(t *testing.T) {
	for _, n := range []int64{1, 30, 3600, math.MaxInt64} {
		want, err := json.Marshal(pipeline.DeniedBody{Error: pipeline.MsgDenied, RetryAfter: n})
		require.NoError(t, err)
		assert.Equal(t, string(want), string(pipeline.AppendDeniedBody(nil, n)))
	}
}
