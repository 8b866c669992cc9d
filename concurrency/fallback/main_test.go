package fallback_test

import (
	"testing"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
