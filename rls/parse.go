package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"go.yaml.in/yaml/v3"

	"github.com/sluice-go/ratelimit"
)

// The keys of each level of the format. quota_mode, value_to_metric and metadata are the
// reference's, refused by name when they ask for what this service does not do; algorithm
// is ours.
var (
	rootKeys       = []string{"domain", "descriptors"}
	descriptorKeys = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode",
		"detailed_metric", "share_threshold", "quota_mode", "value_to_metric", "metadata"}
	rateLimitKeys = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm"}
	replacesKeys  = []string{"name"}
)

// parser reads one file.
type parser struct {
	file  string
	rules *[]*Rule
}

func (p *parser) fail(n *yaml.Node, class error, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return fmt.Errorf("%s:%d: %w: %s", p.file, line, class, fmt.Sprintf(format, args...))
}

func (c *Config) parseFile(f File) error {
	p := &parser{file: f.Name, rules: &c.rules}
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w: %v", f.Name, ErrSyntax, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("%s: %w: %v", f.Name, ErrSyntax, err)
		}
		return p.fail(&extra, ErrSyntax, "a second YAML document: one file holds one domain")
	}
	var root *yaml.Node
	if len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	fields, err := p.fields(root, "the file", rootKeys)
	if err != nil {
		return err
	}
	domain, err := p.str(fields["domain"], "domain")
	if err != nil {
		return err
	}
	if domain == "" {
		return p.fail(root, ErrEmptyDomain, "a file needs a domain")
	}
	if _, dup := c.domains[domain]; dup {
		return p.fail(fields["domain"], ErrDuplicateDomain, "domain %q is defined twice", domain)
	}
	top := &node{}
	if err := p.descriptors(top, fields["descriptors"], domain); err != nil {
		return err
	}
	c.domains[domain] = top
	return nil
}

// fields checks that n is a map (or absent) with only keys among allowed, and returns its
// values by key.
func (p *parser) fields(n *yaml.Node, what string, allowed []string) (map[string]*yaml.Node, error) {
	out := make(map[string]*yaml.Node)
	if n == nil || isNull(n) {
		return out, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, p.fail(n, ErrValue, "%s must be a map", what)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			return nil, p.fail(k, ErrKeyType, "key %s of %s is not a string", k.Value, what)
		}
		if !slices.Contains(allowed, k.Value) {
			return nil, p.fail(k, ErrUnknownKey, "unknown key %q in %s (known: %s)",
				k.Value, what, strings.Join(allowed, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.fail(k, ErrUnknownKey, "key %q twice in %s", k.Value, what)
		}
		out[k.Value] = v
	}
	return out, nil
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

func (p *parser) str(n *yaml.Node, what string) (string, error) {
	if n == nil || isNull(n) {
		return "", nil
	}
	if n.Kind != yaml.ScalarNode {
		return "", p.fail(n, ErrValue, "%s must be a string", what)
	}
	return n.Value, nil
}

func (p *parser) boolean(n *yaml.Node, what string) (bool, error) {
	if n == nil || isNull(n) {
		return false, nil
	}
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, p.fail(n, ErrValue, "%s must be true or false", what)
	}
	return b, nil
}

func (p *parser) list(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n == nil || isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, p.fail(n, ErrValue, "%s must be a list", what)
	}
	for _, e := range n.Content {
		if e.Kind != yaml.MappingNode {
			return nil, p.fail(e, ErrValue, "%s must be a list of maps, not of %s", what, e.Value)
		}
	}
	return n.Content, nil
}

// descriptors reads the list n into parent's children; path names parent.
func (p *parser) descriptors(parent *node, n *yaml.Node, path string) error {
	list, err := p.list(n, "descriptors")
	if err != nil {
		return err
	}
	for _, d := range list {
		if err := p.descriptor(parent, d, path); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) descriptor(parent *node, d *yaml.Node, path string) error {
	f, err := p.fields(d, "a descriptor", descriptorKeys)
	if err != nil {
		return err
	}
	key, err := p.str(f["key"], "key")
	if err != nil {
		return err
	}
	value, err := p.str(f["value"], "value")
	if err != nil {
		return err
	}
	switch {
	case key == "":
		return p.fail(d, ErrEmptyKey, "a descriptor needs a key")
	case strings.Contains(key, "*"):
		return p.fail(f["key"], ErrUnsupported, "key %q: a wildcard in a key (values may have them)", key)
	}
	for _, name := range []string{"quota_mode", "value_to_metric"} {
		on, err := p.boolean(f[name], name)
		if err != nil {
			return err
		}
		if on {
			return p.fail(f[name], ErrUnsupported, "%s", name)
		}
	}
	if f["metadata"] != nil {
		return p.fail(f["metadata"], ErrUnsupported, "metadata")
	}
	n := &node{key: key, value: value}
	here := path + "." + key
	if value != "" {
		here += "_" + value
	}
	if strings.Contains(value, "*") {
		n.pattern = strings.Split(value, "*")
	}
	if n.share, err = p.boolean(f["share_threshold"], "share_threshold"); err != nil {
		return err
	}
	if n.share && n.pattern == nil {
		return p.fail(f["share_threshold"], ErrShareThreshold, "descriptor %s", here)
	}
	shadow, err := p.boolean(f["shadow_mode"], "shadow_mode")
	if err != nil {
		return err
	}
	if _, err := p.boolean(f["detailed_metric"], "detailed_metric"); err != nil {
		return err
	}
	if rl := f["rate_limit"]; rl != nil && !isNull(rl) {
		if n.rule, err = p.rateLimit(rl, here, shadow); err != nil {
			return err
		}
		*p.rules = append(*p.rules, n.rule)
	}
	if err := p.add(parent, n, f["key"], here); err != nil {
		return err
	}
	return p.descriptors(n, f["descriptors"], here)
}

// add makes n a child of parent, refusing a second child of the same key and value.
func (p *parser) add(parent, n *node, at *yaml.Node, path string) error {
	dup := func() error { return p.fail(at, ErrDuplicateKey, "descriptor %s is defined twice", path) }
	switch {
	case n.value == "":
		if parent.keyOnly == nil {
			parent.keyOnly = make(map[string]*node)
		}
		if parent.keyOnly[n.key] != nil {
			return dup()
		}
		parent.keyOnly[n.key] = n
	case n.pattern != nil:
		for _, w := range parent.wild {
			if w.key == n.key && w.value == n.value {
				return dup()
			}
		}
		parent.wild = append(parent.wild, n)
	default:
		if parent.exact == nil {
			parent.exact = make(map[entry]*node)
		}
		e := entry{n.key, n.value}
		if parent.exact[e] != nil {
			return dup()
		}
		parent.exact[e] = n
	}
	return nil
}

func (p *parser) rateLimit(n *yaml.Node, path string, shadow bool) (*Rule, error) {
	f, err := p.fields(n, "rate_limit", rateLimitKeys)
	if err != nil {
		return nil, err
	}
	r := &Rule{Path: path, Shadow: shadow, Algorithm: ratelimit.FixedWindow}
	if r.Name, err = p.str(f["name"], "name"); err != nil {
		return nil, err
	}
	if r.Unlimited, err = p.boolean(f["unlimited"], "unlimited"); err != nil {
		return nil, err
	}
	unitText, err := p.str(f["unit"], "unit")
	if err != nil {
		return nil, err
	}
	unit, known := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(unitText)]
	valid := known && unit != int32(pb.RateLimitResponse_RateLimit_UNKNOWN)
	switch {
	case r.Unlimited && valid:
		return nil, p.fail(f["unit"], ErrUnlimitedWithUnit, "descriptor %s", path)
	case !r.Unlimited && !valid:
		return nil, p.fail(n, ErrUnit, "descriptor %s: unit %q (SECOND, MINUTE, HOUR, DAY, WEEK, MONTH or YEAR)",
			path, unitText)
	case !r.Unlimited:
		r.Unit = pb.RateLimitResponse_RateLimit_Unit(unit)
	}
	if v := f["requests_per_unit"]; v != nil && !isNull(v) {
		if v.Kind != yaml.ScalarNode || v.Decode(&r.RequestsPerUnit) != nil {
			return nil, p.fail(v, ErrValue, "requests_per_unit %q is not a whole number from 0 to 2^32-1", v.Value)
		}
	}
	replaces, err := p.list(f["replaces"], "replaces")
	if err != nil {
		return nil, err
	}
	for _, e := range replaces {
		rf, err := p.fields(e, "a replaces entry", replacesKeys)
		if err != nil {
			return nil, err
		}
		name, err := p.str(rf["name"], "name")
		if err != nil {
			return nil, err
		}
		switch {
		case name == "":
			return nil, p.fail(e, ErrReplaces, "descriptor %s: an empty replaces entry", path)
		case name == r.Name:
			return nil, p.fail(e, ErrReplaces, "descriptor %s replaces its own limit %q", path, name)
		}
		r.Replaces = append(r.Replaces, name)
	}
	if a := f["algorithm"]; a != nil && !isNull(a) {
		word, err := p.str(a, "algorithm")
		if err != nil {
			return nil, err
		}
		alg, ok := algorithmNamed(word)
		if !ok {
			return nil, p.fail(a, ErrAlgorithm, "%q (token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket)", word)
		}
		r.Algorithm = alg
	}
	if !r.Unlimited {
		r.Limit = limitOf(r.RequestsPerUnit, unitSeconds(r.Unit), r.Algorithm)
		if r.Limit != (ratelimit.Limit{}) {
			if err := r.Limit.Validate(); err != nil {
				return nil, p.fail(n, ErrAlgorithm, "descriptor %s: %v", path, err)
			}
		}
	}
	return r, nil
}
