package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ParseJSON reads a rules file in JSON, named file in errors:
//
//	{
//	  "version": "7",
//	  "default": "api",
//	  "policies": {
//	    "login": {"limits": ["5/min", "20/h"], "key": "client-ip"},
//	    "api":   {"limits": ["100/min"], "key": "user", "cost": 1, "priority": "normal"},
//	    "export": {"concurrency": 3, "key": "user"},
//	    "search": {"limits": ["10/s"], "key": "user", "shadow": true}
//	  },
//	  "rules": [
//	    {"match": {"route": "POST /login"}, "policy": "login"}
//	  ]
//	}
//
// Unknown fields are errors, which name the file and the line. Compile checks the result.
func ParseJSON(file string, data []byte) (Document, error) {
	doc := Document{File: file}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	at := func() int { return lineAt(data, dec.InputOffset()) }
	fail := func(line int, err error) (Document, error) {
		return Document{}, fmt.Errorf("%w: %s:%d: %w", ErrInvalid, file, line, err)
	}
	if err := expect(dec, '{'); err != nil {
		return fail(at(), err)
	}
	for dec.More() {
		line := at()
		tok, err := dec.Token()
		if err != nil {
			return fail(line, err)
		}
		switch tok {
		case "version":
			err = dec.Decode(&doc.Version)
		case "default":
			err = dec.Decode(&doc.Default)
		case "policies":
			err = parsePolicies(dec, data, &doc)
		case "rules":
			err = parseRules(dec, data, &doc)
		default:
			err = fmt.Errorf("unknown field %v (version, default, policies, rules)", tok)
		}
		if err != nil {
			var le lineError
			if errors.As(err, &le) {
				return fail(le.line, le.err)
			}
			return fail(line, err)
		}
	}
	if err := expect(dec, '}'); err != nil {
		return fail(at(), err)
	}
	return doc, nil
}

// lineError is an error at a line of its own.
type lineError struct {
	line int
	err  error
}

func (e lineError) Error() string { return e.err.Error() }

func parsePolicies(dec *json.Decoder, data []byte, doc *Document) error {
	if err := expect(dec, '{'); err != nil {
		return err
	}
	for dec.More() {
		line := lineAt(data, dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return lineError{line, err}
		}
		name, _ := tok.(string)
		var p struct {
			Limits      []string `json:"limits"`
			Key         string   `json:"key"`
			Cost        int      `json:"cost"`
			Priority    string   `json:"priority"`
			Shadow      bool     `json:"shadow"`
			Concurrency int      `json:"concurrency"`
		}
		if err := dec.Decode(&p); err != nil {
			return lineError{line, fmt.Errorf("policy %q: %w", name, err)}
		}
		doc.Policies = append(doc.Policies, PolicyDoc{Line: line, Name: name, Limits: p.Limits, Key: p.Key, Cost: p.Cost,
			Priority: p.Priority, Shadow: p.Shadow, Concurrency: p.Concurrency})
	}
	return expect(dec, '}')
}

func parseRules(dec *json.Decoder, data []byte, doc *Document) error {
	if err := expect(dec, '['); err != nil {
		return err
	}
	for dec.More() {
		line := lineAt(data, dec.InputOffset())
		var r struct {
			Match struct {
				Route      string            `json:"route"`
				Method     string            `json:"method"`
				FullMethod string            `json:"full_method"`
				Header     map[string]string `json:"header"`
				Key        map[string]string `json:"key"`
			} `json:"match"`
			Policy string `json:"policy"`
		}
		if err := dec.Decode(&r); err != nil {
			return lineError{line, fmt.Errorf("rule %d: %w", len(doc.Rules)+1, err)}
		}
		doc.Rules = append(doc.Rules, RuleDoc{Line: line, Policy: r.Policy, Match: Match(r.Match)})
	}
	return expect(dec, ']')
}

// expect reads the delimiter d.
func expect(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v where %v was expected", tok, d)
	}
	return nil
}

// lineAt returns the line of the first byte of data after offset that is not a space, a
// comma or a colon: where the next value starts.
func lineAt(data []byte, offset int64) int {
	i := int(min(max(offset, 0), int64(len(data))))
	for i < len(data) && bytes.IndexByte([]byte(" \t\r\n,:"), data[i]) >= 0 {
		i++
	}
	return bytes.Count(data[:i], []byte("\n")) + 1
}
