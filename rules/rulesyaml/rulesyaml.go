// Package rulesyaml reads rules files in YAML for package rules: pass Parse to
// rules.WithParser. It is a module of its own, so that the YAML library stays out of the
// main module.
//
//	version: "7"
//	default: free
//	policies:
//	  login: {limits: [5/min, 20/h], key: client-ip}
//	  free:  {limits: [100/min], key: user}
//	  pro:   {limits: [1000/min], key: user, cost: 1, priority: normal}
//	  export: {concurrency: 3, key: user}
//	  search: {limits: [10/s], key: user, shadow: true}
//	rules:
//	  - match: {route: POST /login}
//	    policy: login
//	  - match: {key: {plan: pro}}
//	    policy: pro
//
// Unknown fields, a count that is not a whole number (cost: 1.9), a second document after
// "---" and a file with no policies (an empty file, or one read while it was written) are
// errors, which name the file and the line, as every error does.
package rulesyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-go/ratelimit/rules"
)

type policy struct {
	Limits      []string `yaml:"limits"`
	Key         string   `yaml:"key"`
	Cost        whole    `yaml:"cost"`
	Priority    string   `yaml:"priority"`
	Shadow      bool     `yaml:"shadow"`
	Concurrency whole    `yaml:"concurrency"`
}

// whole is a count: an integer as written, never a fraction rounded (yaml.v3 would read
// 1.9 as 1).
type whole int

func (w *whole) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return lineError{fmt.Errorf("%q is not a whole number", n.Value), n.Line}
	}
	var i int
	if err := n.Decode(&i); err != nil {
		return lineError{err, n.Line}
	}
	*w = whole(i)
	return nil
}

type rule struct {
	Match struct {
		Route      string            `yaml:"route"`
		Method     string            `yaml:"method"`
		FullMethod string            `yaml:"full_method"`
		Header     map[string]string `yaml:"header"`
		Key        map[string]string `yaml:"key"`
	} `yaml:"match"`
	Policy string `yaml:"policy"`
}

// Parse reads a rules file in YAML (JSON too, which is YAML), named file in errors, for
// rules.WithParser.
func Parse(file string, data []byte) (rules.Document, error) {
	doc := rules.Document{File: file}
	fail := func(line int, err error) (rules.Document, error) {
		return rules.Document{}, fmt.Errorf("%w: %s:%d: %w", rules.ErrInvalid, file, line, err)
	}
	var top struct {
		Version  string    `yaml:"version"`
		Default  string    `yaml:"default"`
		Policies yaml.Node `yaml:"policies"`
		Rules    yaml.Node `yaml:"rules"`
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	switch err := dec.Decode(&root); {
	case err == io.EOF:
		return fail(1, errors.New("an empty file"))
	case err != nil:
		return fail(lineOf(err), err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		return fail(lineOr(err, next.Line), errors.New("a second document (---): a rules file is one"))
	}
	if len(root.Content) == 1 {
		if err := decodeNode(root.Content[0], "file", &top); err != nil {
			return fail(lineOf(err), err)
		}
	}
	doc.Version, doc.Default = top.Version, top.Default
	if p := &top.Policies; p.Kind != 0 {
		if p.Kind != yaml.MappingNode {
			return fail(p.Line, errors.New("policies: a map of names to policies is expected"))
		}
		for i := 0; i+1 < len(p.Content); i += 2 {
			name, body := p.Content[i], p.Content[i+1]
			var pd policy
			if err := decodeNode(body, "policy", &pd); err != nil {
				return fail(lineOr(err, name.Line), fmt.Errorf("policy %q: %w", name.Value, err))
			}
			doc.Policies = append(doc.Policies, rules.PolicyDoc{Line: name.Line, Name: name.Value,
				Limits: pd.Limits, Key: pd.Key, Cost: int(pd.Cost), Priority: pd.Priority, Shadow: pd.Shadow,
				Concurrency: int(pd.Concurrency)})
		}
	}
	if r := &top.Rules; r.Kind != 0 {
		if r.Kind != yaml.SequenceNode {
			return fail(r.Line, errors.New("rules: a list is expected"))
		}
		for i, body := range r.Content {
			var rd rule
			if err := decodeNode(body, "rule", &rd); err != nil {
				return fail(lineOr(err, body.Line), fmt.Errorf("rule %d: %w", i+1, err))
			}
			doc.Rules = append(doc.Rules, rules.RuleDoc{Line: body.Line, Policy: rd.Policy, Match: rules.Match(rd.Match)})
		}
	}
	if top.Policies.Kind == 0 {
		return fail(1, errors.New("no policies (a file read while it was written?)"))
	}
	return doc, nil
}

// fields are the fields each kind of node may have.
var fields = map[string][]string{
	"file":   {"version", "default", "policies", "rules"},
	"policy": {"limits", "key", "cost", "priority", "shadow", "concurrency"},
	"rule":   {"match", "policy"},
	"match":  {"route", "method", "full_method", "header", "key"},
}

// decodeNode decodes n, a node of kind (see fields), into v; an unknown field is an error
// at its line.
func decodeNode(n *yaml.Node, kind string, v any) error {
	if err := known(n, kind); err != nil {
		return err
	}
	if kind == "rule" {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "match" {
				if err := known(n.Content[i+1], "match"); err != nil {
					return err
				}
			}
		}
	}
	if err := n.Decode(v); err != nil {
		if lineOf(err) > 0 {
			return err // a field's own line (whole's)
		}
		return lineError{err, n.Line}
	}
	return nil
}

// known returns an error for the first field of the mapping n that kind does not have.
func known(n *yaml.Node, kind string) error {
	if n.Kind != yaml.MappingNode {
		return lineError{fmt.Errorf("a %s is a map", kind), n.Line}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := n.Content[i]
		if !slices.Contains(fields[kind], key.Value) {
			return lineError{fmt.Errorf("unknown field %q of a %s (%s)", key.Value, kind, strings.Join(fields[kind], ", ")), key.Line}
		}
	}
	return nil
}

// lineError is an error at a line of its own.
type lineError struct {
	err  error
	line int
}

func (e lineError) Error() string { return e.err.Error() }

// lineOf returns the line err is at, 0 when it says none (or err is nil).
func lineOf(err error) int {
	if err == nil {
		return 0
	}
	var le lineError
	if errors.As(err, &le) {
		return le.line
	}
	var n int
	if _, scanErr := fmt.Sscanf(err.Error(), "yaml: line %d:", &n); scanErr == nil {
		return n
	}
	if _, scanErr := fmt.Sscanf(err.Error(), "yaml: unmarshal errors:\n  line %d:", &n); scanErr == nil {
		return n
	}
	return 0
}

// lineOr returns the line err is at, or line.
func lineOr(err error, line int) int {
	if n := lineOf(err); n > 0 {
		return n
	}
	return line
}
