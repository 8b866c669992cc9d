// Command ratelimit speaks to the admin endpoint of a service (package admin): it lists the
// rules' policies, and reads, resets or refunds one key's buckets under a policy.
//
//	ratelimit [-addr URL] [-H 'Name: value']... policies
//	ratelimit [-addr URL] peek   POLICY KEY
//	ratelimit [-addr URL] reset  POLICY KEY
//	ratelimit [-addr URL] refund POLICY KEY N
//
// -addr is the admin endpoint's URL, mount prefix included (default $RATELIMIT_ADMIN, or
// http://localhost:9090). Each -H header is sent with every request; the Authorization
// header defaults to $RATELIMIT_AUTHORIZATION, so that a token need not be on the command
// line. -json prints the endpoint's answer as it is; -h lists the commands and the
// environment. A peek whose buckets are all full says that nothing is spent, as for a key
// never seen. The exit status is 0 on success, 1 when the endpoint refuses or fails, 2 on a
// usage error.
//
// Run it from a clone of the module with go run ./cmd/ratelimit, or from anywhere with go run
// github.com/sluice-go/ratelimit/cmd/ratelimit@latest (or go install, the same path).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// headers is the repeatable -H flag.
type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

// errUsage is run's error for a command line it cannot read.
var errUsage = errors.New("usage: ratelimit [-addr URL] [-H 'Name: value']... [-json] policies | peek POLICY KEY | reset POLICY KEY | refund POLICY KEY N (ratelimit -h for more)")

// usage is what -h prints before the flags.
const usage = `usage: ratelimit [flags] COMMAND

Speaks to a service's admin endpoint (package admin).

Commands:
  policies                the rules' policies: name, key function, limits
  peek   POLICY KEY       the state of KEY's buckets under POLICY
  reset  POLICY KEY       fill KEY's buckets under POLICY
  refund POLICY KEY N     give N tokens back to KEY's buckets under POLICY

KEY is the key as the policy's key function makes it, such as ip:127.0.0.1 (the client's IP).

Environment:
  RATELIMIT_ADMIN          the endpoint's URL, the default of -addr
  RATELIMIT_AUTHORIZATION  the Authorization header sent (a token kept off the command line)

Flags:
`

// run runs the command line args, writing to stdout and stderr, and returns the exit status.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("ratelimit", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", orDefault(getenv("RATELIMIT_ADMIN"), "http://localhost:9090"), "the admin endpoint's URL")
	var hdrs headers
	fs.Var(&hdrs, "H", "a header sent with every request, 'Name: value' (repeatable)")
	raw := fs.Bool("json", false, "print the endpoint's JSON answer as it is")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	method, path, show, err := command(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(*addr, "/")+path, nil)
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit:", err)
		return 2
	}
	if auth := getenv("RATELIMIT_AUTHORIZATION"); auth != "" {
		req.Header.Set("Authorization", auth)
	}
	for _, h := range hdrs {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			fmt.Fprintf(stderr, "ratelimit: -H %q: want 'Name: value'\n", h)
			return 2
		}
		req.Header.Set(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit:", err)
		return 1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		fmt.Fprintln(stderr, "ratelimit:", err)
		return 1
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		_ = json.Unmarshal(body, &e)
		fmt.Fprintf(stderr, "ratelimit: %s: %s\n", resp.Status, orDefault(e.Error, strings.TrimSpace(string(body))))
		return 1
	}
	if *raw {
		_, _ = stdout.Write(body)
		return 0
	}
	if err := show(stdout, body); err != nil {
		fmt.Fprintln(stderr, "ratelimit:", err)
		return 1
	}
	return 0
}

// command returns the method and path of the admin request args ask for, and how to show
// its answer.
func command(args []string) (method, path string, show func(io.Writer, []byte) error, err error) {
	if len(args) == 0 {
		return "", "", nil, errUsage
	}
	keyPath := func() string {
		return "/policies/" + url.PathEscape(args[1]) + "/keys/" + url.PathEscape(args[2])
	}
	switch {
	case args[0] == "policies" && len(args) == 1:
		return http.MethodGet, "/policies", showPolicies, nil
	case args[0] == "peek" && len(args) == 3:
		return http.MethodGet, keyPath(), showStates, nil
	case args[0] == "reset" && len(args) == 3:
		return http.MethodPost, keyPath() + "/reset", showStates, nil
	case args[0] == "refund" && len(args) == 4:
		if n, err := strconv.Atoi(args[3]); err != nil || n < 1 {
			return "", "", nil, fmt.Errorf("ratelimit: refund: N must be a whole number of tokens, at least 1, not %q", args[3])
		}
		return http.MethodPost, keyPath() + "/refund?n=" + args[3], showStates, nil
	}
	return "", "", nil, errUsage
}

// showPolicies prints the version and one line per policy.
func showPolicies(w io.Writer, body []byte) error {
	var out struct {
		Version  string
		Policies []struct {
			Name, Key, Priority string
			Limits              []string
			Cost, Concurrency   int
			Shadow              bool
		}
	}
	if err := decode(body, &out); err != nil {
		return err
	}
	fmt.Fprintf(w, "version %q\n", out.Version)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tKEY\tLIMITS\tOTHER")
	for _, p := range out.Policies {
		var other []string
		if p.Cost > 0 {
			other = append(other, "cost "+strconv.Itoa(p.Cost))
		}
		if p.Priority != "" {
			other = append(other, p.Priority)
		}
		if p.Shadow {
			other = append(other, "shadow")
		}
		if p.Concurrency > 0 {
			other = append(other, "concurrency "+strconv.Itoa(p.Concurrency))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, orDefault(p.Key, "-"), orDefault(strings.Join(p.Limits, ", "), "-"),
			orDefault(strings.Join(other, ", "), "-"))
	}
	return tw.Flush()
}

// showStates prints a key's state under each limit of its policy.
func showStates(w io.Writer, body []byte) error {
	var states []struct {
		Limit      string
		Allowed    bool
		Remaining  int
		RetryAfter float64 `json:"retry_after_seconds"`
		Full       bool
	}
	if err := decode(body, &states); err != nil {
		return err
	}
	full := len(states) > 0
	for _, s := range states {
		full = full && s.Full
	}
	defer func() {
		if full {
			fmt.Fprintln(w, "no usage: every bucket is full, as for a key never seen (is KEY written as its key function makes it, ip:127.0.0.1 and not 127.0.0.1?)")
		}
	}()
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LIMIT\tNEXT\tREMAINING\tRETRY AFTER")
	for _, s := range states {
		next := "allowed"
		if !s.Allowed {
			next = "denied"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%v\n", s.Limit, next, s.Remaining,
			time.Duration(s.RetryAfter*float64(time.Second)).Round(time.Millisecond))
	}
	return tw.Flush()
}

// decode decodes the JSON body into v.
func decode(body []byte, v any) error {
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(v); err != nil {
		return fmt.Errorf("the endpoint's answer: %w", err)
	}
	return nil
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
