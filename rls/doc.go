// Package rls serves Envoy's rate-limit service protocol (RLS v3: ShouldRateLimit over
// gRPC, and POST /json) on the limiters of github.com/sluice-go/ratelimit, from a
// configuration in the format of Envoy's reference service, read as it is. It is a module
// of its own, so that the kit's core never imports Envoy's protos.
//
//	config, err := rls.Load("config.yaml") // a file, or a directory of them
//	svc, err := rls.New(local.New(), config)
//	pb.RegisterRateLimitServiceServer(grpcServer, svc)
//	http.Handle("/", svc.Handler(nil))
//	watcher := rls.Watch(svc, "config.yaml", 0, nil, logError) // reload on change
//
// Command rls/cmd/ratelimit-server runs it; the format, the flags and what differs from the
// reference service are in https://github.com/sluice-go/ratelimit/blob/main/docs/rls.md.
//
// # Decisions
//
// Each descriptor of a request is matched to a Rule of its domain (Parse and Load refuse a
// configuration with a mistake, by class: ErrUnknownKey, ErrDuplicateKey and the others).
// Its limit is a fixed window of its unit, aligned to the Unix epoch as the reference
// counts, or the algorithm its configuration names. Every enforced descriptor of a request
// is decided by one ratelimit.MultiLimiter.AllowAll, all or nothing; shadow descriptors by
// a second, when the first allowed.
//
// # Keys
//
// A bucket's key is the domain and the descriptor's entries, keys and values (or a
// share_threshold pattern), each escaped so that no two descriptors share a bucket by
// accident, and starts with a Redis Cluster hash tag of the domain (WithoutHashTag). Values
// longer than 128 bytes are replaced by a digest.
//
// # Security
//
// Descriptor values are what Envoy sends: client addresses, header values, user names.
// They are personal data in the keys of the buckets (in this process, or in Redis), never
// in errors, logs or metrics, which name descriptors by their configured path (Rule.Path).
// The service trusts its callers: a caller can charge any bucket of a configured domain
// and, unless WithoutDescriptorLimits, set a descriptor's limit. Listen on loopback or a
// private network.
package rls
