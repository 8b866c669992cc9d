// Package rls serves Envoy's rate-limit service protocol (RLS v3, ShouldRateLimit) on the
// kit's engine, with Envoy's configuration format read as it is.
package rls
