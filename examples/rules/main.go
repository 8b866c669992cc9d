// Command rules serves a Gin API whose limits all come from rules.yaml: a login policy of
// two limits per client address that counts failed logins only, one bucket for everyone
// on /search, a limit per address for callers not signed in, and a free and a pro plan per
// signed-in user. The file is read again when it changes, without a restart.
//
//	go run .   (from examples/rules)
//	curl -i localhost:8080/items -H 'Authorization: Bearer ann-token'
package main

import (
	"context"
	"errors"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
	"github.com/sluice-go/ratelimit/rules/rulesyaml"
)

func main() {
	limiter := local.New()
	defer limiter.Close()
	live := newRules(limiter, func(err error) { log.Print(err) })
	if err := live.LoadFile("rules.yaml"); err != nil {
		log.Fatal(err) // a service refuses to start on a bad file
	}
	go live.Watch(context.Background(), "rules.yaml", 2*time.Second)
	srv := &http.Server{Addr: ":8080", Handler: newRouter(limiter, live), ReadHeaderTimeout: 5 * time.Second}
	log.Fatal(srv.ListenAndServe())
}

// session is what the server knows of a signed-in caller.
type session struct{ user, plan string }

// lookup stands for the service's session store: the session of a token it issued.
func lookup(token string) (session, bool) {
	switch token {
	case "ann-token":
		return session{user: "ann", plan: "free"}, true
	case "bob-token":
		return session{user: "bob", plan: "pro"}, true
	}
	return session{}, false
}

// sessionKey is the context key of the caller's session.
type sessionKey struct{}

// newRules returns the rules of the service, with its key functions: each reads what the
// server verified (the socket peer, the session), never a value the client chooses.
func newRules(limiter ratelimit.LimitValidator, onError func(error)) *rules.Rules {
	fromSession := func(field func(session) string) rules.KeyFunc {
		return func(r rules.Request) (string, error) {
			s, ok := r.Context().Value(sessionKey{}).(session)
			if !ok {
				return "", errors.New("not signed in")
			}
			return field(s), nil
		}
	}
	reg := rules.Registry{
		"client-ip": rules.HTTPKey(httpkeys.ClientIP()), // the socket peer's address
		"global":    func(rules.Request) (string, error) { return "all", nil },
		"user":      fromSession(func(s session) string { return s.user }),
		"plan":      fromSession(func(s session) string { return s.plan }),
	}
	return rules.New(reg, rules.WithParser(rulesyaml.Parse), rules.WithValidator(limiter),
		rules.WithErrorHandler(onError))
}

// newRouter builds the API: authentication first, which puts the session in the request's
// context, then the rate limit, whose policies come from live.
func newRouter(limiter ratelimit.Limiter, live *rules.Rules) *gin.Engine {
	r := gin.New()
	r.Use(authenticate, ginmw.New(limiter, ginmw.WithRules(live),
		// Count failed logins only: a successful one gets its tokens back.
		ginmw.WithRefundIf(func(c *gin.Context) bool {
			return c.FullPath() == "/login" && c.Writer.Status() < http.StatusBadRequest
		})))
	r.POST("/login", func(c *gin.Context) {
		if c.PostForm("password") != "demo" {
			c.JSON(http.StatusUnauthorized, gin.H{"error": "wrong password"})
			return
		}
		c.JSON(http.StatusOK, gin.H{"token": "ann-token"})
	})
	r.GET("/search", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"results": []string{}}) })
	r.GET("/items", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"items": []string{}}) })
	return r
}

// authenticate puts the caller's session, when its bearer token is one the server issued,
// in the request's context.
func authenticate(c *gin.Context) {
	token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if s, known := lookup(token); ok && known {
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), sessionKey{}, s))
	}
}
