package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
// Unknown fields, a field given twice, a file with no "policies" (an empty file, or one
// read while it was written) and anything after the object are errors, which name the file
// and the line. Compile checks the result. It reads the file once: its time is linear in
// the file's size.
func ParseJSON(file string, data []byte) (Document, error) {
	doc, _, err := parseJSON(file, data)
	return doc, err
}

// parseJSON is ParseJSON, and the number of bytes it scanned for line numbers.
func parseJSON(file string, data []byte) (Document, int, error) {
	p := &jsonParser{dec: json.NewDecoder(bytes.NewReader(data)), lines: lines{data: data, line: 1}}
	doc, err := p.document(file)
	if err != nil {
		var le lineError
		if !errors.As(err, &le) {
			le = lineError{p.at(), err}
		}
		return Document{}, p.lines.scanned, fmt.Errorf("%w: %s:%d: %w", ErrInvalid, file, le.line, le.err)
	}
	return doc, p.lines.scanned, nil
}

// jsonParser reads a rules file token by token, so that each field is seen, and its line
// known.
type jsonParser struct {
	dec   *json.Decoder
	lines lines
}

// at returns the line where the next value starts.
func (p *jsonParser) at() int { return p.lines.at(p.dec.InputOffset()) }

// lineError is an error at a line of its own.
type lineError struct {
	line int
	err  error
}

func (e lineError) Error() string { return e.err.Error() }

func (p *jsonParser) document(file string) (Document, error) {
	doc := Document{File: file}
	if len(bytes.TrimSpace(p.lines.data)) == 0 {
		return doc, lineError{1, errors.New("an empty file")}
	}
	var policies bool
	err := p.object(func(name string) error {
		switch name {
		case "version":
			return p.dec.Decode(&doc.Version)
		case "default":
			return p.dec.Decode(&doc.Default)
		case "policies":
			policies = true
			return p.policies(&doc)
		case "rules":
			return p.rules(&doc)
		}
		return fmt.Errorf("unknown field %s (version, default, policies, rules)", name)
	})
	if err != nil {
		return doc, err
	}
	line := p.at()
	if _, err := p.dec.Token(); err != io.EOF {
		return doc, lineError{line, errors.New("data after the file's object")}
	}
	if !policies {
		return doc, lineError{line, errors.New(`no "policies" (a file read while it was written?)`)}
	}
	return doc, nil
}

// object reads an object, each field's value by field (given its name), and refuses a field
// given twice: an error of field, or of a value it reads, is at the field's line.
func (p *jsonParser) object(field func(name string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	var seen map[string]bool
	for p.dec.More() {
		line := p.at()
		tok, err := p.dec.Token()
		if err != nil {
			return lineError{line, err}
		}
		name, _ := tok.(string) // a key, always a string
		if seen[name] {
			return lineError{line, fmt.Errorf("field %q given twice", name)}
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[name] = true
		if err := field(name); err != nil {
			var le lineError
			if errors.As(err, &le) {
				return err
			}
			return lineError{line, err}
		}
	}
	return p.expect('}')
}

// policies reads the policies' object. A name given twice is Compile's to refuse, at both
// lines' policies.
func (p *jsonParser) policies(doc *Document) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	for p.dec.More() {
		line := p.at()
		tok, err := p.dec.Token()
		if err != nil {
			return lineError{line, err}
		}
		pd := PolicyDoc{Line: line}
		pd.Name, _ = tok.(string)
		err = p.object(func(field string) error {
			switch field {
			case "limits":
				return p.dec.Decode(&pd.Limits)
			case "key":
				return p.dec.Decode(&pd.Key)
			case "cost":
				return p.dec.Decode(&pd.Cost)
			case "priority":
				return p.dec.Decode(&pd.Priority)
			case "shadow":
				return p.dec.Decode(&pd.Shadow)
			case "concurrency":
				return p.dec.Decode(&pd.Concurrency)
			}
			return fmt.Errorf("unknown field %q (limits, key, cost, priority, shadow, concurrency)", field)
		})
		if err != nil {
			return within(fmt.Sprintf("policy %q", pd.Name), line, err)
		}
		doc.Policies = append(doc.Policies, pd)
	}
	return p.expect('}')
}

func (p *jsonParser) rules(doc *Document) error {
	if err := p.expect('['); err != nil {
		return err
	}
	for p.dec.More() {
		rd := RuleDoc{Line: p.at()}
		err := p.object(func(field string) error {
			switch field {
			case "match":
				return p.match(&rd.Match)
			case "policy":
				return p.dec.Decode(&rd.Policy)
			}
			return fmt.Errorf("unknown field %q (match, policy)", field)
		})
		if err != nil {
			return within(fmt.Sprintf("rule %d", len(doc.Rules)+1), rd.Line, err)
		}
		doc.Rules = append(doc.Rules, rd)
	}
	return p.expect(']')
}

func (p *jsonParser) match(m *Match) error {
	return p.object(func(field string) error {
		switch field {
		case "route":
			return p.dec.Decode(&m.Route)
		case "method":
			return p.dec.Decode(&m.Method)
		case "full_method":
			return p.dec.Decode(&m.FullMethod)
		case "header":
			return p.strings(&m.Header)
		case "key":
			return p.strings(&m.Key)
		}
		return fmt.Errorf("unknown field %q of a match (route, method, full_method, header, key)", field)
	})
}

// strings reads an object of strings into *m, refusing a name given twice.
func (p *jsonParser) strings(m *map[string]string) error {
	*m = map[string]string{}
	return p.object(func(name string) error {
		var v string
		err := p.dec.Decode(&v)
		(*m)[name] = v
		return err
	})
}

// within says that err is of what, at line unless it names its own.
func within(what string, line int, err error) error {
	var le lineError
	if errors.As(err, &le) {
		line, err = le.line, le.err
	}
	return lineError{line, fmt.Errorf("%s: %w", what, err)}
}

// expect reads the delimiter d.
func (p *jsonParser) expect(d json.Delim) error {
	tok, err := p.dec.Token()
	if err != nil {
		return err
	}
	if tok != d {
		return fmt.Errorf("%v where %v was expected", tok, d)
	}
	return nil
}

// lines finds the line of an offset of data, counting each newline once: offsets are asked
// in order, and each count starts where the last ended.
type lines struct {
	data    []byte
	off     int // the offset counted to
	line    int // the line at off
	scanned int // bytes counted, in all
}

// at returns the line of the first byte of data from offset on that is not a space, a comma
// or a colon: where the next value starts.
func (l *lines) at(offset int64) int {
	i := int(min(max(offset, 0), int64(len(l.data))))
	for i < len(l.data) && strings.IndexByte(" \t\r\n,:", l.data[i]) >= 0 {
		i++
	}
	if i < l.off { // never, as offsets only grow; counted again from the start
		l.off, l.line = 0, 1
	}
	l.line += bytes.Count(l.data[l.off:i], []byte("\n"))
	l.scanned += i - l.off
	l.off = i
	return l.line
}
