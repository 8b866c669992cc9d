package distributed

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
)

// invalidState returns err, or, when Redis answered that the bucket holds a value the
// script cannot read (the refund scripts' INVALIDSTATE reply, or Redis's WRONGTYPE), an
// error wrapping ratelimit.ErrInvalidState and Redis's reply: a fault of that bucket alone,
// not of Redis, which the bucket's next decision mends (the decision scripts read such a
// value as a new bucket and replace it). Neither reply names the key.
func invalidState(err error) error {
	var reply redis.Error
	if errors.As(err, &reply) &&
		(redis.HasErrorPrefix(reply, "INVALIDSTATE") || redis.HasErrorPrefix(reply, "WRONGTYPE")) {
		return fmt.Errorf("%w (Redis: %w): the bucket's next decision replaces it with a new bucket",
			ratelimit.ErrInvalidState, reply)
	}
	return err
}
