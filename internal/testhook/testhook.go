// Package testhook hands the tests of other modules (valkeyclient) what a package's own
// tests get from its export_test.go: distributed registers here, at init, the option that
// makes its scripts read a test's clock.
package testhook

import "time"

// DistributedClock returns distributed's option that makes the scripts read now instead
// of Redis TIME, with a skew bound of an hour (a distributed.Option, as any: this package
// cannot import distributed).
var DistributedClock func(now func() time.Time) any
