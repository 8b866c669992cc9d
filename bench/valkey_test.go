package bench

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/valkeyclient"
)

// newValkey returns a valkey-go client of the server client talks to, without client-side
// caching (which the limiters never use), closed at b's cleanup.
func newValkey(b *testing.B, client *redis.Client) valkey.Client {
	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{client.Options().Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(vc.Close)
	return vc
}

// openValkeyOurs is ours on valkey-go (distributed.NewWith and valkeyclient) with the
// defaults of openRedisOurs and the token bucket, its keys under a prefix of their own.
func openValkeyOurs(b *testing.B, client *redis.Client, tr redisTraffic) take {
	l, err := distributed.NewWith(valkeyclient.New(newValkey(b, client)), distributed.WithPrefix("valkey:"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	ctx, limit := context.Background(), tr.ours(ratelimit.TokenBucket)
	return func(key string) (bool, error) {
		res, err := l.Allow(ctx, key, limit)
		return res.Allowed, err
	}
}

// openValkeyEvalSHA is the floor of openEvalSHA on valkey-go: noop's EVALSHA.
func openValkeyEvalSHA(b *testing.B, client *redis.Client, _ redisTraffic) take {
	vc := newValkey(b, client)
	script := valkey.NewLuaScript("return 1")
	ctx := context.Background()
	return func(key string) (bool, error) {
		n, err := script.Exec(ctx, vc, []string{key}, nil).AsInt64()
		return n == 1, err
	}
}
