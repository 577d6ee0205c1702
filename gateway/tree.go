package gateway

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// tree is a document of a YAML, JSON or TOML configuration, with the line of every
// value: what the Envoy, Kong and Traefik formats read.
type tree struct {
	kind  treeKind
	pairs []treePair // a map's, in the file's order
	items []*tree    // a list's
	text  string     // a scalar's, as written (quotes removed)
	str   bool       // the scalar was a string (quoted, or not a number or bool)
	line  int
}

type treeKind uint8

const (
	treeNull treeKind = iota
	treeScalar
	treeMap
	treeList
)

type treePair struct {
	key   string
	value *tree
}

// get returns the value of key in a map, or nil.
func (t *tree) get(key string) *tree {
	if t == nil || t.kind != treeMap {
		return nil
	}
	for _, p := range t.pairs {
		if p.key == key {
			return p.value
		}
	}
	return nil
}

// path follows keys through nested maps.
func (t *tree) path(keys ...string) *tree {
	for _, k := range keys {
		t = t.get(k)
	}
	return t
}

// scalar is the text of a scalar value, and whether t is one.
func (t *tree) scalar() (string, bool) {
	if t == nil || t.kind != treeScalar {
		return "", false
	}
	return t.text, true
}

// yamlDocs parses data (YAML or JSON) into one tree per document. Anchors and aliases
// are followed, merge keys merged; a syntax error is an *Error at its line and column.
func yamlDocs(path string, data []byte) ([]*tree, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			p := ye.GetToken().Position
			return nil, &Error{File: path, Line: p.Line, Column: p.Column, Msg: "YAML syntax error: " + ye.GetMessage()}
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return nil, &Error{File: path, Msg: "YAML syntax error: " + msg}
	}
	c := yamlConverter{path: path}
	var out []*tree
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		t, err := c.convert(doc.Body, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

type yamlConverter struct {
	path string
}

// yamlMaxDepth bounds nesting, so that a hostile file cannot exhaust the stack; alias
// expansion counts towards it too.
const yamlMaxDepth = 200

func (c yamlConverter) fail(n ast.Node, format string, args ...any) error {
	e := &Error{File: c.path, Msg: fmt.Sprintf(format, args...)}
	if tok := n.GetToken(); tok != nil && tok.Position != nil {
		e.Line, e.Column = tok.Position.Line, tok.Position.Column
	}
	return e
}

func (c yamlConverter) convert(n ast.Node, depth int) (*tree, error) {
	if depth > yamlMaxDepth {
		return nil, c.fail(n, "YAML nested more than %d levels deep", yamlMaxDepth)
	}
	line := 0
	if tok := n.GetToken(); tok != nil && tok.Position != nil {
		line = tok.Position.Line
	}
	switch v := n.(type) {
	case *ast.NullNode:
		return &tree{kind: treeNull, line: line}, nil
	case *ast.StringNode:
		return &tree{kind: treeScalar, text: v.Value, str: true, line: line}, nil
	case *ast.LiteralNode:
		return &tree{kind: treeScalar, text: v.Value.Value, str: true, line: line}, nil
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return &tree{kind: treeScalar, text: n.GetToken().Value, line: line}, nil
	case *ast.TagNode:
		return c.convert(v.Value, depth+1)
	case *ast.AnchorNode:
		return c.convert(v.Value, depth+1)
	case *ast.AliasNode:
		// go-yaml's parser leaves the alias's target to the decoder; this package reads
		// only what it can place, so an alias is refused rather than guessed.
		return nil, c.fail(n, "YAML aliases (*name) are not read: write the value out")
	case *ast.MappingValueNode:
		return c.mapping([]*ast.MappingValueNode{v}, line, depth)
	case *ast.MappingNode:
		return c.mapping(v.Values, line, depth)
	case *ast.SequenceNode:
		t := &tree{kind: treeList, line: line}
		for _, item := range v.Values {
			it, err := c.convert(item, depth+1)
			if err != nil {
				return nil, err
			}
			t.items = append(t.items, it)
		}
		return t, nil
	case *ast.CommentGroupNode, *ast.CommentNode:
		return &tree{kind: treeNull, line: line}, nil
	}
	return nil, c.fail(n, "a YAML %s is not read here", n.Type())
}

func (c yamlConverter) mapping(values []*ast.MappingValueNode, line, depth int) (*tree, error) {
	t := &tree{kind: treeMap, line: line}
	for _, mv := range values {
		if _, merge := mv.Key.(*ast.MergeKeyNode); merge {
			return nil, c.fail(mv.Key, "YAML merge keys (<<) are not read: write the values out")
		}
		k, ok := mv.Key.(ast.ScalarNode)
		if !ok {
			return nil, c.fail(mv.Key, "a map key must be a plain value")
		}
		key := fmt.Sprint(k.GetValue())
		if s, ok := mv.Key.(*ast.StringNode); ok {
			key = s.Value
		}
		if t.get(key) != nil {
			return nil, c.fail(mv.Key, "%q is given twice", key)
		}
		v, err := c.convert(mv.Value, depth+1)
		if err != nil {
			return nil, err
		}
		if v.line == 0 {
			v.line = mv.Key.GetToken().Position.Line
		}
		t.pairs = append(t.pairs, treePair{key: key, value: v})
	}
	return t, nil
}

// treeReader reads values of a tree for one format, naming the file in its errors.
type treeReader struct {
	src *Source
	col *collector
}

func (r treeReader) at(t *tree) Place { return Place{File: r.src.Name, Line: t.line} }

func (r treeReader) fail(t *tree, field, format string, args ...any) error {
	return &Error{File: r.src.Path, Line: t.line, Msg: field + ": " + fmt.Sprintf(format, args...)}
}

// integer reads a whole number field of a map; ok is false when the field is absent.
func (r treeReader) integer(m *tree, field string) (n int64, ok bool, err error) {
	v := m.get(field)
	if v == nil || v.kind == treeNull {
		return 0, false, nil
	}
	s, isScalar := v.scalar()
	if isScalar {
		if f, perr := strconv.ParseFloat(s, 64); perr == nil && f == float64(int64(f)) && f >= -1<<53 && f <= 1<<53 {
			return int64(f), true, nil
		}
	}
	return 0, false, r.fail(v, field, "want a whole number, got %s", describe(v))
}

// number reads a number field of a map (a whole number or a decimal).
func (r treeReader) number(m *tree, field string) (f float64, ok bool, err error) {
	v := m.get(field)
	if v == nil || v.kind == treeNull {
		return 0, false, nil
	}
	if s, isScalar := v.scalar(); isScalar {
		if f, perr := strconv.ParseFloat(s, 64); perr == nil && !v.str {
			return f, true, nil
		}
	}
	return 0, false, r.fail(v, field, "want a number, got %s", describe(v))
}

// text reads a string field of a map (any scalar, as written).
func (r treeReader) text(m *tree, field string) (s string, ok bool, err error) {
	v := m.get(field)
	if v == nil || v.kind == treeNull {
		return "", false, nil
	}
	if s, isScalar := v.scalar(); isScalar {
		return s, true, nil
	}
	return "", false, r.fail(v, field, "want a value, got %s", describe(v))
}

// describe names what a value is, for errors.
func describe(t *tree) string {
	switch t.kind {
	case treeMap:
		return "a map"
	case treeList:
		return "a list"
	case treeNull:
		return "nothing"
	}
	return strconv.Quote(t.text)
}
