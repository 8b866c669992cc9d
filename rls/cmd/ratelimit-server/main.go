// Command ratelimit-server is Envoy's rate-limit service (RLS v3) on the kit's engine: gRPC
// ShouldRateLimit, and POST /json, /healthcheck and /metrics over HTTP, from a
// configuration file or directory in Envoy's format, reloaded when it changes, or from the
// RateLimitConfig resources an xDS management server (Envoy Gateway's) pushes.
//
//	ratelimit-server -config examples/rls/config.yaml
//	ratelimit-server -config /etc/ratelimit -redis 10.0.0.5:6379 -instances 4
//	ratelimit-server -xds envoy-gateway:18001 -xds-node ratelimit -redis 10.0.0.5:6379
//	ratelimit-server -xds envoy-gateway:18001 -xds-ca ca.pem -xds-cert tls.crt -xds-key tls.key
//
// Without -redis the limits live in this process's memory; with it, in Redis (one node,
// or a Redis Cluster named by a comma-separated list of seeds), behind a circuit breaker
// that falls back to this instance's share of each limit (-instances) while Redis is
// down. It listens on loopback unless told otherwise, and stops gracefully on SIGTERM or
// SIGINT. https://github.com/sluice-go/ratelimit/blob/main/docs/rls.md has the details.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/prommetrics"
	"github.com/sluice-go/ratelimit/rls"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "ratelimit-server:", err)
		}
		os.Exit(2)
	}
}

// settings are the command line's.
type settings struct {
	config, grpcAddr, httpAddr, redis, prefix string
	xds, xdsNode                              string
	xdsCA, xdsCert, xdsKey, xdsServerName     string
	instances                                 int
	style, failure                            string
	overrides, hashTag                        bool
	poll, grace                               time.Duration
}

func parse(args []string, stderr io.Writer) (settings, error) {
	var s settings
	fs := flag.NewFlagSet("ratelimit-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.config, "config", "", "the configuration: a YAML file, or a directory of them (this or -xds)")
	fs.StringVar(&s.xds, "xds", "", "host:port of an xDS management server pushing RateLimitConfig resources (Envoy Gateway's); this or -config")
	fs.StringVar(&s.xdsNode, "xds-node", "default", "the node id given to the -xds server")
	fs.StringVar(&s.xdsCA, "xds-ca", "", "PEM file of the CAs that sign the -xds server's certificate: TLS (default: the system's, when -xds-cert is given)")
	fs.StringVar(&s.xdsCert, "xds-cert", "", "PEM file of this client's certificate for the -xds server (mutual TLS), with -xds-key")
	fs.StringVar(&s.xdsKey, "xds-key", "", "PEM file of the -xds-cert certificate's private key")
	fs.StringVar(&s.xdsServerName, "xds-server-name", "", "the name the -xds server's certificate must hold (default: the -xds host)")
	fs.StringVar(&s.grpcAddr, "grpc-addr", "127.0.0.1:8081", "the gRPC listener's address")
	fs.StringVar(&s.httpAddr, "http-addr", "127.0.0.1:8080", "the HTTP listener's address (/json, /healthcheck, /metrics)")
	fs.StringVar(&s.redis, "redis", "", "Redis: host:port of a node, or a comma-separated list of Redis Cluster seeds; empty: in memory")
	fs.StringVar(&s.prefix, "redis-prefix", "rls:", "the prefix of every Redis key")
	fs.IntVar(&s.instances, "instances", 1, "how many instances share the limits: each enforces its share while Redis is down")
	fs.StringVar(&s.style, "header-style", "ietf", "response headers: ietf (RateLimit, RateLimit-Policy), x-ratelimit (X-RateLimit-*), both, or none")
	fs.StringVar(&s.failure, "failure-mode", "open", "when the limiter cannot decide: open (OK), closed (OVER_LIMIT) or error (a gRPC Unavailable)")
	fs.BoolVar(&s.overrides, "descriptor-limits", true, "apply a descriptor's own limit (Envoy's rate limit override)")
	fs.BoolVar(&s.hashTag, "hash-tag", true, "start Redis keys with a hash tag of their domain, so a request's buckets share a Cluster slot")
	fs.DurationVar(&s.poll, "reload-interval", rls.DefaultPollInterval, "how often the configuration is read for changes")
	fs.DurationVar(&s.grace, "shutdown-grace", 10*time.Second, "how long calls in flight may take to finish on SIGTERM")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	switch {
	case fs.NArg() > 0:
		return s, fmt.Errorf("unexpected arguments %q", fs.Args())
	case s.config == "" && s.xds == "":
		return s, errors.New("-config or -xds is required")
	case s.config != "" && s.xds != "":
		return s, errors.New("-config and -xds conflict: give one")
	case s.instances < 1:
		return s, errors.New("-instances must be at least 1")
	case (s.xdsCert == "") != (s.xdsKey == ""):
		return s, errors.New("-xds-cert and -xds-key go together: give both or neither")
	case s.xds == "" && s.xdsTLS():
		return s, errors.New("-xds-ca, -xds-cert, -xds-key and -xds-server-name need -xds")
	}
	return s, nil
}

// options returns the service's options from the settings.
func (s settings) options(metrics *prommetrics.Collector) ([]rls.Option, error) {
	opts := []rls.Option{rls.WithObserver(metrics)}
	switch s.style {
	case "ietf":
	case "x-ratelimit":
		opts = append(opts, rls.WithHeaderStyle(headers.StyleXRateLimit))
	case "both":
		opts = append(opts, rls.WithHeaderStyle(headers.StyleBoth))
	case "none":
		opts = append(opts, rls.WithoutHeaders())
	default:
		return nil, fmt.Errorf("-header-style %q: ietf, x-ratelimit, both or none", s.style)
	}
	switch s.failure {
	case "open":
	case "closed":
		opts = append(opts, rls.WithFailureMode(rls.FailClosed))
	case "error":
		opts = append(opts, rls.WithFailureMode(rls.FailError))
	default:
		return nil, fmt.Errorf("-failure-mode %q: open, closed or error", s.failure)
	}
	if !s.overrides {
		opts = append(opts, rls.WithoutDescriptorLimits())
	}
	if !s.hashTag {
		opts = append(opts, rls.WithoutHashTag())
	}
	return opts, nil
}

// limiter builds the limiter of the settings, and what closes it.
func (s settings) limiter(metrics *prommetrics.Collector, log *slog.Logger) (ratelimit.Limiter, func(), error) {
	memory := local.New()
	if s.redis == "" {
		return memory, func() { _ = memory.Close() }, nil
	}
	addrs := strings.Split(s.redis, ",")
	var client interface {
		redis.Scripter
		Close() error
	}
	if len(addrs) == 1 {
		client = redis.NewClient(&redis.Options{Addr: addrs[0], ContextTimeoutEnabled: true})
	} else {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	}
	primary, err := distributed.New(client, distributed.WithPrefix(s.prefix))
	if err != nil {
		_ = client.Close()
		_ = memory.Close()
		return nil, nil, err
	}
	l := fallback.New(primary, memory, fallback.WithInstances(s.instances),
		fallback.WithStateHook(metrics.ObserveBreaker),
		fallback.WithStateHook(func(c fallback.StateChange) {
			if c.Edge() {
				log.Warn("redis", "breaker", c)
			}
		}))
	return l, func() {
		_ = l.Close()
		_ = primary.Close()
		_ = memory.Close()
		_ = client.Close()
	}, nil
}

// watch keeps svc's configuration that of the -config path or of the -xds server, and
// returns what stops it.
func (s settings) watch(svc *rls.Service, log *slog.Logger) (func(), error) {
	if s.xds == "" {
		w := rls.Watch(svc, s.config, s.poll,
			func(c *rls.Config) { log.Info("configuration reloaded", "domains", c.Domains()) },
			func(err error) { log.Error("configuration not reloaded", "err", err) })
		return w.Close, nil
	}
	creds, err := s.xdsCredentials()
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(s.xds, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("-xds: %w", err)
	}
	w := rls.WatchXDS(svc, conn, &core.Node{Id: s.xdsNode},
		func(c *rls.Config) { log.Info("xds configuration loaded", "domains", c.Domains()) },
		func(err error) { log.Error("xds configuration not loaded", "err", err) })
	return func() { w.Close(); _ = conn.Close() }, nil
}

// run serves until ctx ends, then stops gracefully. ready, when not nil, is told the
// addresses it listens on once it serves.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(grpcAddr, httpAddr string)) error {
	s, err := parse(args, stderr)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var config *rls.Config // none until the -xds server pushes one
	if s.config != "" {
		if config, err = rls.Load(s.config); err != nil {
			return err
		}
	}
	metrics := prommetrics.New()
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)
	opts, err := s.options(metrics)
	if err != nil {
		return err
	}
	limiter, closeLimiter, err := s.limiter(metrics, log)
	if err != nil {
		return err
	}
	defer closeLimiter()
	svc, err := rls.New(limiter, config, opts...)
	if err != nil {
		return err
	}
	closeWatcher, err := s.watch(svc, log)
	if err != nil {
		return err
	}
	defer closeWatcher()

	grpcLn, err := net.Listen("tcp", s.grpcAddr)
	if err != nil {
		return err
	}
	httpLn, err := net.Listen("tcp", s.httpAddr)
	if err != nil {
		_ = grpcLn.Close()
		return err
	}
	gs := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(gs, svc)
	hs := &http.Server{
		Handler:           svc.Handler(promhttp.HandlerFor(registry, promhttp.HandlerOpts{})),
		ReadHeaderTimeout: 5 * time.Second,
	}
	errs := make(chan error, 2)
	go func() { errs <- gs.Serve(grpcLn) }()
	go func() { errs <- hs.Serve(httpLn) }()
	log.Info("serving", "grpc", grpcLn.Addr().String(), "http", httpLn.Addr().String(),
		"domains", svc.Config().Domains(), "redis", s.redis != "", "xds", s.xds)
	if ready != nil {
		ready(grpcLn.Addr().String(), httpLn.Addr().String())
	}

	var served error
	select {
	case <-ctx.Done():
	case served = <-errs:
	}
	log.Info("stopping")
	stopCtx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	_ = hs.Shutdown(stopCtx)
	select {
	case <-stopped:
	case <-stopCtx.Done():
		gs.Stop()
		<-stopped
	}
	if served != nil && !errors.Is(served, http.ErrServerClosed) && !errors.Is(served, grpc.ErrServerStopped) {
		return served
	}
	return nil
}
