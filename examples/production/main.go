// Command production is the recommended way to run the kit in a service, whole: every
// instance shares its limits through Redis, and keeps enforcing its share of them locally
// while Redis is slow or away.
//
//   - Redis through package distributed, behind package fallback: a circuit breaker, local
//     limits at this instance's share (-instances), and a denial cache for hammered keys.
//   - POST /login: 5 attempts a minute and 20 an hour per client address, decided all or
//     nothing; a successful login gives its tokens back, so only failures count; when the
//     limiter cannot decide, the login is refused (fail closed).
//   - /api/, a Gin router mounted on the net/http mux: 10 requests a second per signed-in
//     user (per client address for the others); /api/stats is sheddable, so that under load
//     it leaves a reserve to the rest.
//   - GET /metrics: the decisions in Prometheus's format, from package otelmetrics through
//     the OpenTelemetry Prometheus exporter, named as the PromQL of
//     https://github.com/sluice-go/ratelimit/blob/main/docs/observability.md expects;
//     GET /healthz is not limited.
//   - The breaker's changes are logged once at the start and once at the end of an outage;
//     go-redis's own lines (several a second while Redis is away) go to the same logger at
//     debug level, which the default handler drops (redis.SetLogger).
//   - SIGINT or SIGTERM drains the server, then closes the limiters and the client.
//
// Run it beside a Redis server, or without one: it then warns once that Redis is not
// answering and serves on local limits (this instance's share of each) until Redis does.
//
//	cd examples/production && go run . -redis localhost:6379
//	curl -si -X POST -d 'user=alice&password=wrong' localhost:8080/login
//	curl -si -H 'Authorization: Bearer alice-token' localhost:8080/api/items/42
//	curl -s localhost:8080/metrics | grep ratelimit_
//
// It is a module of its own, so that the Prometheus client never becomes a dependency of
// the kit.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"github.com/redis/go-redis/v9"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/priority"
)

// config is what the flags set.
type config struct {
	RedisAddr string
	Instances int // how many instances share the limits
}

func main() {
	addr := flag.String("addr", "localhost:8080", "address to listen on")
	var cfg config
	flag.StringVar(&cfg.RedisAddr, "redis", "localhost:6379", "Redis address (host:port)")
	flag.IntVar(&cfg.Instances, "instances", 1, "instances sharing the limits: while Redis is away, each enforces 1/n of them")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", *addr)
	if err == nil {
		logger.Info("listening", "addr", "http://"+ln.Addr().String())
		err = run(ctx, ln, cfg, logger)
	}
	if err != nil {
		logger.Error("production example", "err", err)
		os.Exit(1)
	}
}

// run serves on ln until ctx ends, then shuts down gracefully.
func run(ctx context.Context, ln net.Listener, cfg config, logger *slog.Logger) error {
	redis.SetLogger(redisLog{logger}) // process-wide: before any client
	client := redis.NewClient(&redis.Options{
		Addr: cfg.RedisAddr,
		// the limiter's deadline is the socket's: no retry after a timeout
		ContextTimeoutEnabled: true,
		MaxRetries:            -1, // behind fallback a retry buys nothing, and could charge twice
		DialerRetries:         1,  // a refused connection fails at once; fallback decides
	})
	defer client.Close()
	primary, err := distributed.New(client)
	if err != nil {
		return err
	}
	check, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := primary.Check(check); err != nil {
		// Not fatal: the fallback enforces local limits until Redis answers.
		logger.Warn("Redis is not answering; starting on local limits", "err", err)
	}
	cancel()

	// OpenTelemetry metrics, exported to Prometheus with Prometheus's naming convention.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes))
	if err != nil {
		return err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer func() { _ = provider.Shutdown(context.Background()) }()
	obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(provider))
	if err != nil {
		return err
	}

	secondary := local.New()
	defer secondary.Close()
	limiter := fallback.New(primary, secondary,
		fallback.WithInstances(cfg.Instances),
		fallback.WithStateHook(obs.ObserveBreaker),
		fallback.WithStateHook(func(c fallback.StateChange) {
			if c.Edge() { // the start and the end of an outage, not every probe
				logger.Warn("rate limiter", "breaker", c)
			}
		}))
	defer limiter.Close()

	srv := &http.Server{
		Handler:           routes(limiter, obs, registry),
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan error, 1)
	go func() {
		<-ctx.Done()
		drain, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- srv.Shutdown(drain)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return <-done
}

// redisLog routes go-redis's own log lines to logger at debug level, marked from=go-redis:
// while Redis is away the breaker says so twice (start and end), and the client's lines
// about each failed connection would bury that. logging.Disable (package
// github.com/redis/go-redis/v9/logging) silences them instead.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "go-redis")
}

// routes builds the service: its handlers, each behind its limits.
func routes(limiter *fallback.Limiter, obs *otelmetrics.Observer, registry *prometheus.Registry) http.Handler {
	clientIP := httpkeys.ClientIP() // the socket peer; name your proxies with WithTrustedProxies

	loginLimit := httpmw.New(limiter,
		httpmw.WithPolicyName("login"),
		httpmw.WithLimits(func(r *http.Request) []ratelimit.Request {
			ip, err := clientIP(r)
			if err != nil {
				ip = httpmw.UnkeyedKey
			}
			key := "{" + ip + "}" // one hash tag: both buckets in one Redis Cluster slot
			return []ratelimit.Request{
				{Key: key + ":m", Limit: ratelimit.PerMinute(5), Name: "login-minute"},
				{Key: key + ":h", Limit: ratelimit.PerHour(20), Name: "login-hour"},
			}
		}),
		httpmw.WithRefundIf(func(_ *http.Request, status int) bool { return status < 400 }),
		httpmw.WithFailClosed(),
		httpmw.WithObserver(obs))

	mux := http.NewServeMux()
	mux.Handle("POST /login", loginLimit(http.HandlerFunc(login)))
	mux.Handle("/api/", api(limiter, obs))
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// api is the part of the service written with Gin, behind package ginmw: the same limiter,
// observer and answers as the net/http routes.
func api(limiter *fallback.Limiter, obs *otelmetrics.Observer) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	// as httpkeys.ClientIP: the socket peer unless proxies are named
	clientIP := keyfuncs.ClientIP()
	r := gin.New()
	g := r.Group("/api", ginmw.New(limiter,
		ginmw.WithPolicyName("api"),
		ginmw.WithLimit(ratelimit.PerSecond(10)),
		ginmw.WithKeyFunc(func(c *gin.Context) (string, error) {
			if user, ok := signedIn(c.Request); ok {
				return "user:" + user, nil
			}
			return clientIP(c)
		}),
		ginmw.WithPriorityFunc(func(c *gin.Context) priority.Level {
			if c.FullPath() == "/api/stats" {
				return priority.Sheddable
			}
			return priority.Normal
		}),
		ginmw.WithObserver(obs)))
	g.GET("/items/:id", func(c *gin.Context) {
		c.String(http.StatusOK, "item %s\n", c.Param("id"))
	})
	g.GET("/stats", func(c *gin.Context) {
		c.String(http.StatusOK, "stats\n")
	})
	return r
}

// The demonstration's one user. A real service checks a password hash, and reads the user
// of /api/ from a verified session or token: a key the client can choose is no limit.
const (
	demoUser     = "alice"
	demoPassword = "secret"
	demoToken    = "alice-token"
)

// login answers 204 to the right password and 401 to a wrong one.
func login(w http.ResponseWriter, r *http.Request) {
	if r.PostFormValue("user") != demoUser || r.PostFormValue("password") != demoPassword {
		http.Error(w, "wrong user or password", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// signedIn returns the user a request's bearer token names.
func signedIn(r *http.Request) (string, bool) {
	if r.Header.Get("Authorization") == "Bearer "+demoToken {
		return demoUser, true
	}
	return "", false
}
