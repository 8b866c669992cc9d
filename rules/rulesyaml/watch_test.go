package rulesyaml_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
	"github.com/sluice-go/ratelimit/rules/rulesyaml"
)

// liveFile is rules.md's headline file at a version, with a comment that ends the
// policies at a multiple of 16 bytes: that prefix is a valid file, with every policy and
// no rule, which puts POST /login under the default policy.
func liveFile(version string) (file string, policiesEnd int) {
	head := `version: "` + version + `"
default: free
policies:
  login:  {limits: [10/h], priority: critical}
  free:   {limits: [100/min], key: user}
  pro:    {limits: [1000/min], key: user, cost: 1}
  search: {limits: [10/s], key: user, shadow: true}
#`
	head += strings.Repeat("-", 15-len(head)%16) + "\n"
	return head + `rules:
  - match: {route: POST /login}
    policy: login
  - match: {key: {plan: pro}}
    policy: pro
`, len(head)
}

// A file rewritten in place, 16 bytes at a time, while Watch reads it every second and a
// client logs in after every piece: the file is first truncated and stays empty for three
// reads (one error, however many reads see it), then grows a piece every 900 ms, so that
// each read finds another prefix (the one of every policy and no rule among them) and no
// two reads agree until it is whole. No prefix takes effect: the login policy, 10 an
// hour on the client's address, admits exactly 10 of all the logins, before, during and
// after the reload, which keeps its bucket. A rename then takes effect two reads later.
func TestWatchWhileWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "rules.yaml")
		first, _ := liveFile("1")
		require.NoError(t, os.WriteFile(path, []byte(first), 0o600))
		var errs []error
		reg := rules.Registry{"user": registry["user"], "plan": func(rules.Request) (string, error) { return "free", nil }}
		live := rules.New(reg, rules.WithParser(rulesyaml.Parse),
			rules.WithErrorHandler(func(err error) { errs = append(errs, err) }))
		require.NoError(t, live.LoadFile(path))
		limiter := local.New()
		defer func() { _ = limiter.Close() }()
		mux := http.NewServeMux()
		mux.HandleFunc("POST /login", func(http.ResponseWriter, *http.Request) {})
		handler := httpmw.New(limiter, httpmw.WithRules(live))(mux)
		admitted := 0
		login := func() {
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/login", nil))
			if w.Code == http.StatusOK {
				admitted++
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { live.Watch(ctx, path, time.Second); close(done) }()

		time.Sleep(50 * time.Millisecond) // between reads, at 1 s, 2 s…
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		require.NoError(t, err)
		for range 3 {
			time.Sleep(time.Second)
			synctest.Wait()
			login()
			assert.Equal(t, "1", live.Set().Version)
		}
		next, end := liveFile("2")
		require.Zero(t, end%16)
		prefix, err := rulesyaml.Parse(path, []byte(next[:end]))
		require.NoError(t, err, "a valid prefix")
		require.Len(t, prefix.Policies, 4)
		require.Empty(t, prefix.Rules)
		for len(next) > 0 {
			n := min(16, len(next))
			_, err := f.WriteString(next[:n])
			require.NoError(t, err)
			next = next[n:]
			time.Sleep(900 * time.Millisecond)
			synctest.Wait()
			login()
			require.Equal(t, "1", live.Set().Version, "no prefix takes effect")
		}
		require.NoError(t, f.Close())
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, "2", live.Set().Version, "whole, and read twice: in force")
		login()
		assert.Equal(t, 10, admitted, "the login policy held at every step")
		require.Len(t, errs, 1)
		assert.EqualError(t, errs[0], "rules: invalid rules: "+path+":1: an empty file")

		// Written beside, renamed over: in force two reads later.
		tmp := path + ".new"
		third, _ := liveFile("3")
		require.NoError(t, os.WriteFile(tmp, []byte(strings.Replace(third, "10/h", "12/h", 1)), 0o600))
		require.NoError(t, os.Rename(tmp, path))
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, "3", live.Set().Version)
		login()
		login()
		login()
		assert.Equal(t, 12, admitted, "the bucket kept its 10: 2 more under 12/h")
		assert.Len(t, errs, 1)
		cancel()
		<-done
	})
}
