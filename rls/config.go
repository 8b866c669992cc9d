package rls

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluice-go/ratelimit"
)

// Errors of loading a configuration, wrapped with the file, the line and what was wrong:
// test them with errors.Is. Every one also wraps ErrConfig.
var (
	// ErrConfig is wrapped by every error of loading a configuration.
	ErrConfig = errors.New("rls: invalid configuration")
	// ErrSyntax is a file that is not YAML.
	ErrSyntax = fmt.Errorf("%w: not YAML", ErrConfig)
	// ErrUnknownKey is a key the format does not have at that place ("ratelimit" for
	// "rate_limit", say).
	ErrUnknownKey = fmt.Errorf("%w: unknown key", ErrConfig)
	// ErrKeyType is a map key that is not a string (0.25:).
	ErrKeyType = fmt.Errorf("%w: a key that is not a string", ErrConfig)
	// ErrValue is a value of the wrong type or range (a list where a map is expected, a
	// negative requests_per_unit, a list holding something else than maps).
	ErrValue = fmt.Errorf("%w: a value of the wrong type", ErrConfig)
	// ErrEmptyDomain is a file without a domain.
	ErrEmptyDomain = fmt.Errorf("%w: empty domain", ErrConfig)
	// ErrDuplicateDomain is a domain that two files both define.
	ErrDuplicateDomain = fmt.Errorf("%w: duplicate domain", ErrConfig)
	// ErrEmptyKey is a descriptor without a key.
	ErrEmptyKey = fmt.Errorf("%w: descriptor with an empty key", ErrConfig)
	// ErrDuplicateKey is two descriptors of one level with the same key and value.
	ErrDuplicateKey = fmt.Errorf("%w: duplicate descriptor", ErrConfig)
	// ErrUnit is a rate limit whose unit is missing or none of SECOND, MINUTE, HOUR, DAY,
	// WEEK, MONTH and YEAR.
	ErrUnit = fmt.Errorf("%w: invalid rate limit unit", ErrConfig)
	// ErrUnlimitedWithUnit is an unlimited rate limit that names a unit.
	ErrUnlimitedWithUnit = fmt.Errorf("%w: unlimited with a unit", ErrConfig)
	// ErrReplaces is a replaces entry that is empty or names its own limit.
	ErrReplaces = fmt.Errorf("%w: invalid replaces", ErrConfig)
	// ErrShareThreshold is share_threshold on a descriptor whose value has no wildcard.
	ErrShareThreshold = fmt.Errorf("%w: share_threshold without a wildcard", ErrConfig)
	// ErrUnsupported is a feature of the reference service this one does not implement
	// (quota_mode, value_to_metric, metadata, a '*' in a key), refused rather than ignored.
	ErrUnsupported = fmt.Errorf("%w: not supported", ErrConfig)
	// ErrAlgorithm is an algorithm field that names none of the kit's algorithms, or a
	// limit that the algorithm cannot enforce.
	ErrAlgorithm = fmt.Errorf("%w: invalid algorithm", ErrConfig)
)

// Config is a loaded configuration: the domains of one or more files, each a tree of
// descriptors. It is immutable, and safe for concurrent use. The zero Config has no
// domain: every request answers OK with no limit.
type Config struct {
	domains map[string]*node
	// rules lists every rule with a limit, for validating them against a limiter.
	rules []*Rule
}

// Rule is one rate_limit of a configuration, as the descriptor that holds it configures it.
type Rule struct {
	// Name is rate_limit's name, which replaces entries refer to; may be empty.
	Name string
	// Path names the descriptor in headers and metrics: the domain, then each level's key
	// and, where it has one, its configured value (a wildcard pattern as written), as in
	// "checkout.user_tier_gold.path"; never a value a request sent.
	Path string
	// Unit is the unit of the limit; UNKNOWN for an unlimited one.
	Unit pb.RateLimitResponse_RateLimit_Unit
	// RequestsPerUnit is the number of requests allowed per unit; 0 blocks every request.
	RequestsPerUnit uint32
	// Unlimited reports an unlimited rate limit: the descriptor always answers OK.
	Unlimited bool
	// Shadow reports shadow_mode: an OVER_LIMIT is reported as OK.
	Shadow bool
	// Replaces lists the names of the limits this one replaces in a request that matches
	// both.
	Replaces []string
	// Algorithm is the algorithm that enforces the limit: ratelimit.FixedWindow, as the
	// reference service counts, unless the algorithm field (an extension) names another.
	Algorithm ratelimit.Algorithm
	// Limit is the kit's limit: RequestsPerUnit per window of one Unit, with KeepUsage so
	// that a reload that changes the numbers keeps what was used; the zero Limit when
	// Unlimited or RequestsPerUnit is 0.
	Limit ratelimit.Limit

	multiplier uint32 // a descriptor's own limit's unit_multiplier, when above 1
}

// node is one descriptor of the tree, or a domain's root.
type node struct {
	key, value string
	pattern    []string // value split at '*' when it holds one; nil otherwise
	share      bool
	rule       *Rule
	exact      map[entry]*node // children with a value without '*'
	keyOnly    map[string]*node
	wild       []*node // children whose value holds '*', in the file's order
}

type entry struct{ key, value string }

// Domains returns the names of the configured domains, sorted.
func (c *Config) Domains() []string {
	names := make([]string, 0, len(c.domains))
	for d := range c.domains {
		names = append(names, d)
	}
	sort.Strings(names)
	return names
}

// File is the content of one configuration file, named for errors.
type File struct {
	Name string
	Data []byte
}

// Parse reads the files of one configuration: each holds one domain, in Envoy's rate-limit
// service format (https://github.com/sluice-go/ratelimit/blob/main/docs/rls.md). The
// first mistake found is returned, wrapping ErrConfig and one of the errors above, with the
// file and line.
func Parse(files ...File) (*Config, error) {
	c := &Config{domains: make(map[string]*node)}
	for _, f := range files {
		if err := c.parseFile(f); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// Load reads the configuration at path: a file, or a directory whose files ending in
// .yaml or .yml (not starting with '.') are read in the order of their names; the
// directory's subdirectories are not read. A directory without such files is a
// configuration without domains.
func Load(path string) (*Config, error) {
	files, err := ReadFiles(path)
	if err != nil {
		return nil, err
	}
	return Parse(files...)
}

// ReadFiles reads the files Load would parse, without parsing them.
func ReadFiles(path string) ([]File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("rls: configuration: %w", err)
	}
	if !info.IsDir() {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("rls: configuration: %w", err)
		}
		return []File{{Name: path, Data: data}}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("rls: configuration: %w", err)
	}
	var files []File
	for _, e := range entries { // sorted by name
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") ||
			!(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		full := filepath.Join(path, name)
		data, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("rls: configuration: %w", err)
		}
		files = append(files, File{Name: full, Data: data})
	}
	return files, nil
}

// unitSeconds returns the length of a unit in seconds, as the reference service counts it:
// a month is 30 days and a year 365, windows aligned to the Unix epoch.
func unitSeconds(u pb.RateLimitResponse_RateLimit_Unit) int64 {
	switch u {
	case pb.RateLimitResponse_RateLimit_SECOND:
		return 1
	case pb.RateLimitResponse_RateLimit_MINUTE:
		return 60
	case pb.RateLimitResponse_RateLimit_HOUR:
		return 3600
	case pb.RateLimitResponse_RateLimit_DAY:
		return 86400
	case pb.RateLimitResponse_RateLimit_WEEK:
		return 7 * 86400
	case pb.RateLimitResponse_RateLimit_MONTH:
		return 30 * 86400
	case pb.RateLimitResponse_RateLimit_YEAR:
		return 365 * 86400
	}
	return 0
}

// limitOf returns the kit's limit of n requests per window of seconds under algorithm a,
// with KeepUsage; the zero Limit for n = 0.
func limitOf(n uint32, seconds int64, a ratelimit.Algorithm) ratelimit.Limit {
	if n == 0 || seconds <= 0 {
		return ratelimit.Limit{}
	}
	return ratelimit.Limit{Rate: float64(n) / float64(seconds), Burst: int(n), Algorithm: a, KeepUsage: true}
}

// algorithmNamed reads the algorithm field: one of the words of the kit's limit text
// (token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket), read by
// ratelimit.ParseLimit so that the names have one owner.
func algorithmNamed(word string) (ratelimit.Algorithm, bool) {
	if len(strings.Fields(word)) != 1 || strings.TrimSpace(word) != word {
		return 0, false
	}
	l, err := ratelimit.ParseLimit("1/s " + word)
	if err != nil || l.Algorithm == ratelimit.DefaultAlgorithm || l.KeepUsage {
		return 0, false
	}
	return l.Algorithm, true
}

// glob reports whether value matches pattern, the parts of a configured value split at
// '*', each '*' standing for any run of bytes, the empty one included.
func glob(parts []string, value string) bool {
	first, last := parts[0], parts[len(parts)-1]
	if len(value) < len(first)+len(last) || !strings.HasPrefix(value, first) ||
		!strings.HasSuffix(value, last) {
		return false
	}
	rest := value[len(first) : len(value)-len(last)]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(rest, p)
		if i < 0 {
			return false
		}
		rest = rest[i+len(p):]
	}
	return true
}
