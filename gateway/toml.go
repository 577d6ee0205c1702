package gateway

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// tomlDoc parses the part of TOML that configuration files use into a tree: tables
// ([a.b]) and arrays of tables ([[a]]), keys bare, quoted or dotted, and values that are
// strings ("…" with escapes, '…' literal), numbers, booleans, arrays and inline tables.
// What it does not read — multi-line strings, dates and times — is an *Error at its line,
// as is anything that is not TOML.
func tomlDoc(path string, data []byte) (*tree, error) {
	p := &tomlParser{path: path, data: data, line: 1}
	return p.parse()
}

type tomlParser struct {
	path string
	data []byte
	pos  int
	line int
}

// tomlMaxDepth bounds the nesting of arrays and inline tables.
const tomlMaxDepth = 100

func (p *tomlParser) fail(format string, args ...any) error {
	return &Error{File: p.path, Line: p.line, Msg: "TOML: " + fmt.Sprintf(format, args...)}
}

func (p *tomlParser) peek() byte {
	if p.pos < len(p.data) {
		return p.data[p.pos]
	}
	return 0
}

// space skips spaces and tabs, and a comment when comments is set.
func (p *tomlParser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t':
			p.pos++
		case '#':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// blank skips spaces, comments and line ends.
func (p *tomlParser) blank() {
	for {
		p.space()
		switch p.peek() {
		case '\n':
			p.line++
			p.pos++
		case '\r':
			p.pos++
		default:
			return
		}
	}
}

// endOfLine requires the rest of the line to be empty or a comment.
func (p *tomlParser) endOfLine() error {
	p.space()
	switch p.peek() {
	case 0, '\n', '\r':
		return nil
	}
	return p.fail("unexpected %q after a value (one key = value per line)", p.peek())
}

func (p *tomlParser) parse() (*tree, error) {
	root := &tree{kind: treeMap, line: 1}
	cur := root
	for {
		p.blank()
		if p.pos >= len(p.data) {
			return root, nil
		}
		if p.peek() == '[' {
			array := strings.HasPrefix(string(p.data[p.pos:]), "[[")
			p.pos++
			if array {
				p.pos++
			}
			keys, err := p.keys()
			if err != nil {
				return nil, err
			}
			closing := "]"
			if array {
				closing = "]]"
			}
			p.space()
			if !strings.HasPrefix(string(p.data[p.pos:]), closing) {
				return nil, p.fail("a table header must end with %s", closing)
			}
			p.pos += len(closing)
			if err := p.endOfLine(); err != nil {
				return nil, err
			}
			if cur, err = p.table(root, keys, array); err != nil {
				return nil, err
			}
			continue
		}
		keys, err := p.keys()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.peek() != '=' {
			return nil, p.fail("want key = value")
		}
		p.pos++
		p.space()
		v, err := p.value(0)
		if err != nil {
			return nil, err
		}
		if err := p.set(cur, keys, v); err != nil {
			return nil, err
		}
		if err := p.endOfLine(); err != nil {
			return nil, err
		}
	}
}

// table returns the table a header names, creating what it must; an array of tables
// gets a new table at its end.
func (p *tomlParser) table(root *tree, keys []string, array bool) (*tree, error) {
	t := root
	for i, k := range keys {
		next := t.get(k)
		last := i == len(keys)-1
		switch {
		case next == nil && last && array:
			next = &tree{kind: treeList, line: p.line}
			t.pairs = append(t.pairs, treePair{key: k, value: next})
		case next == nil:
			next = &tree{kind: treeMap, line: p.line}
			t.pairs = append(t.pairs, treePair{key: k, value: next})
		}
		if next.kind == treeList {
			if last && array {
				item := &tree{kind: treeMap, line: p.line}
				next.items = append(next.items, item)
				return item, nil
			}
			if len(next.items) == 0 || next.items[len(next.items)-1].kind != treeMap {
				return nil, p.fail("%s is not a table", strings.Join(keys[:i+1], "."))
			}
			next = next.items[len(next.items)-1]
		} else if next.kind != treeMap || (last && array) {
			return nil, p.fail("%s is already a value", strings.Join(keys[:i+1], "."))
		}
		t = next
	}
	return t, nil
}

// set puts v at the dotted keys under t.
func (p *tomlParser) set(t *tree, keys []string, v *tree) error {
	for i, k := range keys[:len(keys)-1] {
		next := t.get(k)
		if next == nil {
			next = &tree{kind: treeMap, line: p.line}
			t.pairs = append(t.pairs, treePair{key: k, value: next})
		}
		if next.kind != treeMap {
			return p.fail("%s is already a value", strings.Join(keys[:i+1], "."))
		}
		t = next
	}
	k := keys[len(keys)-1]
	if t.get(k) != nil {
		return p.fail("%s is given twice", strings.Join(keys, "."))
	}
	t.pairs = append(t.pairs, treePair{key: k, value: v})
	return nil
}

// keys reads a key: bare, quoted, or several joined by dots.
func (p *tomlParser) keys() ([]string, error) {
	var out []string
	for {
		p.space()
		var k string
		switch c := p.peek(); {
		case c == '"' || c == '\'':
			s, err := p.str()
			if err != nil {
				return nil, err
			}
			k = s
		default:
			start := p.pos
			for p.pos < len(p.data) && isBareKey(p.data[p.pos]) {
				p.pos++
			}
			if p.pos == start {
				return nil, p.fail("want a key, found %q", p.peek())
			}
			k = string(p.data[start:p.pos])
		}
		out = append(out, k)
		p.space()
		if p.peek() != '.' {
			return out, nil
		}
		p.pos++
	}
}

func isBareKey(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// str reads a one-line string, "basic" or 'literal'.
func (p *tomlParser) str() (string, error) {
	quote := p.peek()
	if strings.HasPrefix(string(p.data[p.pos:]), strings.Repeat(string(quote), 3)) {
		return "", p.fail("multi-line strings are not read")
	}
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.data) || p.data[p.pos] == '\n' {
			return "", p.fail("a string is not closed on its line")
		}
		c := p.data[p.pos]
		p.pos++
		switch {
		case c == quote:
			return b.String(), nil
		case c == '\\' && quote == '"':
			if p.pos >= len(p.data) {
				return "", p.fail("a string is not closed on its line")
			}
			e := p.data[p.pos]
			p.pos++
			switch e {
			case '"', '\\':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'u', 'U':
				n := 4
				if e == 'U' {
					n = 8
				}
				if p.pos+n > len(p.data) {
					return "", p.fail("a short \\%c escape", e)
				}
				r, err := strconv.ParseUint(string(p.data[p.pos:p.pos+n]), 16, 32)
				if err != nil || !utf8.ValidRune(rune(r)) {
					return "", p.fail("a bad \\%c escape", e)
				}
				b.WriteRune(rune(r))
				p.pos += n
			default:
				return "", p.fail("unknown escape \\%c", e)
			}
		default:
			b.WriteByte(c)
		}
	}
}

// value reads a value; depth counts the arrays and inline tables around it.
func (p *tomlParser) value(depth int) (*tree, error) {
	if depth > tomlMaxDepth {
		return nil, p.fail("values nested more than %d deep", tomlMaxDepth)
	}
	line := p.line
	switch c := p.peek(); {
	case c == '"' || c == '\'':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return &tree{kind: treeScalar, text: s, str: true, line: line}, nil
	case c == '[':
		p.pos++
		t := &tree{kind: treeList, line: line}
		for {
			p.blank()
			if p.peek() == ']' {
				p.pos++
				return t, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, v)
			p.blank()
			switch p.peek() {
			case ',':
				p.pos++
			case ']':
			default:
				return nil, p.fail("want , or ] in an array")
			}
		}
	case c == '{':
		p.pos++
		t := &tree{kind: treeMap, line: line}
		p.space()
		if p.peek() == '}' {
			p.pos++
			return t, nil
		}
		for {
			keys, err := p.keys()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.peek() != '=' {
				return nil, p.fail("want key = value in an inline table")
			}
			p.pos++
			p.space()
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			if err := p.set(t, keys, v); err != nil {
				return nil, err
			}
			p.space()
			switch p.peek() {
			case ',':
				p.pos++
			case '}':
				p.pos++
				return t, nil
			default:
				return nil, p.fail("want , or } in an inline table (on one line)")
			}
		}
	}
	start := p.pos
	for p.pos < len(p.data) && !strings.ContainsRune(" \t\r\n,]}#", rune(p.data[p.pos])) {
		p.pos++
	}
	word := string(p.data[start:p.pos])
	switch {
	case word == "true" || word == "false":
	case word == "":
		return nil, p.fail("want a value")
	default:
		clean := strings.ReplaceAll(word, "_", "")
		if _, err := strconv.ParseFloat(clean, 64); err != nil {
			if _, err := strconv.ParseInt(clean, 0, 64); err != nil {
				return nil, p.fail("%q is not a value rlsim reads (a string needs quotes; dates are not read)", word)
			}
		}
		word = clean
	}
	return &tree{kind: treeScalar, text: word, line: line}, nil
}
