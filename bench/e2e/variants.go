package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	tollbooth "github.com/didip/tollbooth/v7"
	tblimiter "github.com/didip/tollbooth/v7/limiter"
	"github.com/gin-gonic/gin"
	"github.com/go-chi/httprate"
	"github.com/redis/go-redis/v9"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	ulule "github.com/ulule/limiter/v3"
	ulgin "github.com/ulule/limiter/v3/drivers/middleware/gin"
	ulstdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ulmemory "github.com/ulule/limiter/v3/drivers/store/memory"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
)

// Variant is one server of the comparison: a framework ("gin" or "http"), a backend
// ("local" or "redis"), a key ("ip": the client's address; "header": the X-User header),
// traffic ("allow": a limit the run cannot exhaust; "deny": one request per key per hour,
// each key's one request made before the measurement) and a limiter ("ours", a peer, or
// "none": the handler alone). It is written "gin/local/header/allow/ours".
type Variant struct {
	Framework, Backend, Key, Traffic, Limiter string
}

func (v Variant) String() string {
	return strings.Join([]string{v.Framework, v.Backend, v.Key, v.Traffic, v.Limiter}, "/")
}

// Cell is the variant without its limiter: what the limiters of one table row share.
func (v Variant) Cell() string {
	return strings.Join([]string{v.Framework, v.Backend, v.Key, v.Traffic}, "/")
}

// ParseVariant reads a variant written as String writes it.
func ParseVariant(s string) (Variant, error) {
	f := strings.Split(s, "/")
	if len(f) != 5 {
		return Variant{}, fmt.Errorf("variant %q: want framework/backend/key/traffic/limiter", s)
	}
	v := Variant{f[0], f[1], f[2], f[3], f[4]}
	if !v.valid() {
		return Variant{}, fmt.Errorf("variant %q: no such server (see Variants)", s)
	}
	return v, nil
}

// peers are the limiters each framework and backend is compared with: the middlewares each
// peer ships for it. "none" is the handler alone, the framework's own cost.
var peers = map[string][]string{
	"gin/local":  {"ours", "ulule", "none"},
	"http/local": {"ours", "httprate", "sethvargo", "tollbooth", "ulule", "none"},
	"gin/redis":  {"ours", "ulule"},
	"http/redis": {"ours", "ulule"},
}

func (v Variant) valid() bool {
	if v.Key != "ip" && v.Key != "header" || v.Traffic != "allow" && v.Traffic != "deny" {
		return false
	}
	for _, l := range peers[v.Framework+"/"+v.Backend] {
		if l == v.Limiter {
			return l != "none" || v.Traffic == "allow"
		}
	}
	return false
}

// Variants returns every variant, cell by cell, filtered: a variant is kept when each of
// its fields is in the corresponding list of only (an empty list keeps every value).
func Variants(only Variant) []Variant {
	in := func(list, v string) bool {
		if list == "" {
			return true
		}
		for _, x := range strings.Split(list, ",") {
			if x == v {
				return true
			}
		}
		return false
	}
	var out []Variant
	for _, fw := range []string{"gin", "http"} {
		for _, be := range []string{"local", "redis"} {
			for _, key := range []string{"ip", "header"} {
				for _, tr := range []string{"allow", "deny"} {
					for _, l := range peers[fw+"/"+be] {
						if l == "none" && tr == "deny" {
							continue // the handler alone denies nothing
						}
						v := Variant{fw, be, key, tr, l}
						if in(only.Framework, fw) && in(only.Backend, be) && in(only.Key, key) &&
							in(only.Traffic, tr) && in(only.Limiter, l) {
							out = append(out, v)
						}
					}
				}
			}
		}
	}
	return out
}

// The limits of the two traffics: allow is never exhausted in a run, deny admits one
// request per key per hour.
const (
	allowPerHour = 1 << 30
	denyPerHour  = 1
)

func (v Variant) perHour() int {
	if v.Traffic == "allow" {
		return allowPerHour
	}
	return denyPerHour
}

// userHeader is the header of the header key.
const userHeader = "X-User"

// Handler returns the server of v: a GET /items/{id} route answering "ok", behind v's
// limiter. rdb is the Redis client of the redis backend (nil otherwise). close releases
// what the limiter holds.
func (v Variant) Handler(rdb *redis.Client) (h http.Handler, close func(), err error) {
	close = func() {}
	ok := func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	if v.Framework == "gin" {
		gin.SetMode(gin.ReleaseMode)
		r := gin.New()
		mw, c, err := v.ginMiddleware(rdb)
		if err != nil {
			return nil, nil, err
		}
		handlers := append(mw, func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		r.GET("/items/:id", handlers...)
		return r, c, nil
	}
	wrap, close, err := v.httpMiddleware(rdb)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", wrap(http.HandlerFunc(ok)))
	return mux, close, nil
}

// ourLimiter is the limiter of ours on v's backend, with v's limit. On Redis its deadline
// is a second, as go-redis's own read timeout is for ulule's store: the comparison is of
// costs, not of how each fails on a machine too busy to answer in 50 ms.
func (v Variant) ourLimiter(rdb *redis.Client) (ratelimit.Limiter, ratelimit.Limit, error) {
	limit := ratelimit.PerHour(v.perHour())
	if v.Backend == "redis" {
		l, err := distributed.New(rdb, distributed.WithTimeout(time.Second))
		return l, limit, err
	}
	return local.New(), limit, nil
}

// ululeLimiter is ulule/limiter on v's backend, with v's limit.
func (v Variant) ululeLimiter(rdb *redis.Client) (*ulule.Limiter, error) {
	rate := ulule.Rate{Period: time.Hour, Limit: int64(v.perHour())}
	if v.Backend == "redis" {
		store, err := ulredis.NewStoreWithOptions(rdb, ulule.StoreOptions{Prefix: "ulule"})
		if err != nil {
			return nil, err
		}
		return ulule.New(store, rate), nil
	}
	return ulule.New(ulmemory.NewStore(), rate), nil
}

func (v Variant) ginMiddleware(rdb *redis.Client) ([]gin.HandlerFunc, func(), error) {
	switch v.Limiter {
	case "none":
		return nil, func() {}, nil
	case "ours":
		l, limit, err := v.ourLimiter(rdb)
		if err != nil {
			return nil, nil, err
		}
		opts := []ginmw.Option{ginmw.WithLimit(limit)}
		if v.Key == "header" {
			opts = append(opts, ginmw.WithKeyFunc(keyfuncs.Header(userHeader)))
		}
		return []gin.HandlerFunc{ginmw.New(l, opts...)}, func() { _ = l.Close() }, nil
	case "ulule":
		l, err := v.ululeLimiter(rdb)
		if err != nil {
			return nil, nil, err
		}
		var opts []ulgin.Option
		if v.Key == "header" {
			opts = append(opts, ulgin.WithKeyGetter(func(c *gin.Context) string { return c.GetHeader(userHeader) }))
		}
		return []gin.HandlerFunc{ulgin.NewMiddleware(l, opts...)}, func() {}, nil
	}
	return nil, nil, fmt.Errorf("%v: no such server", v)
}

func (v Variant) httpMiddleware(rdb *redis.Client) (func(http.Handler) http.Handler, func(), error) {
	byHeader := func(r *http.Request) (string, error) { return r.Header.Get(userHeader), nil }
	switch v.Limiter {
	case "none":
		return func(h http.Handler) http.Handler { return h }, func() {}, nil
	case "ours":
		l, limit, err := v.ourLimiter(rdb)
		if err != nil {
			return nil, nil, err
		}
		opts := []httpmw.Option{httpmw.WithLimit(limit)}
		if v.Key == "header" {
			opts = append(opts, httpmw.WithKeyFunc(httpkeys.Header(userHeader)))
		}
		return httpmw.New(l, opts...), func() { _ = l.Close() }, nil
	case "ulule":
		l, err := v.ululeLimiter(rdb)
		if err != nil {
			return nil, nil, err
		}
		var opts []ulstdlib.Option
		if v.Key == "header" {
			opts = append(opts, ulstdlib.WithKeyGetter(func(r *http.Request) string { return r.Header.Get(userHeader) }))
		}
		return ulstdlib.NewMiddleware(l, opts...).Handler, func() {}, nil
	case "httprate":
		key := httprate.KeyByIP
		if v.Key == "header" {
			key = byHeader
		}
		return httprate.Limit(v.perHour(), time.Hour, httprate.WithKeyFuncs(key)), func() {}, nil
	case "sethvargo":
		store, err := memorystore.New(&memorystore.Config{Tokens: uint64(v.perHour()), Interval: time.Hour})
		if err != nil {
			return nil, nil, err
		}
		key := httplimit.IPKeyFunc()
		if v.Key == "header" {
			key = byHeader
		}
		m, err := httplimit.NewMiddleware(store, key)
		if err != nil {
			return nil, nil, err
		}
		return m.Handle, func() { _ = store.Close(context.Background()) }, nil
	case "tollbooth":
		lmt := tollbooth.NewLimiter(float64(v.perHour())/3600, &tblimiter.ExpirableOptions{DefaultExpirationTTL: time.Hour})
		lmt.SetBurst(v.perHour()).SetIPLookups([]string{"RemoteAddr"}).SetIgnoreURL(true)
		if v.Key == "header" {
			lmt.SetHeader(userHeader, []string{})
		}
		return func(h http.Handler) http.Handler { return tollbooth.LimitHandler(lmt, h) }, func() {}, nil
	}
	return nil, nil, fmt.Errorf("%v: no such server", v)
}
