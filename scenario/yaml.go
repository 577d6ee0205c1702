package scenario

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// PositionError is a problem in a scenario file, located by file, line and column (both
// 1-based) and by the dotted path of the field it concerns.
type PositionError struct {
	File   string
	Line   int
	Column int
	Field  string
	Msg    string
}

func (e *PositionError) Error() string {
	return oneLine(e.error())
}

// oneLine keeps an error to one line whatever text a file put into it.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

func (e *PositionError) error() string {
	where := e.File
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	}
	if e.Field == "" {
		return where + ": " + e.Msg
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Field, e.Msg)
}

// decodeYAML decodes data (from file, for messages) into v, a pointer to a struct, and
// returns where every field was found, by its path ("traffic[0].poisson.rate").
//
// goccy/go-yaml parses (a duplicate key is its syntax error) and decodes in its strict
// mode (an unknown field is an error), the scalar types of this package through their
// UnmarshalText and the traffic entries through their UnmarshalYAML. Before it decodes, one walk over its syntax tree
// beside v's type records every field's position and refuses what go-yaml would let
// through — a float truncated into an integer, a quoted number, a null, an anchor, an
// alias or a tag — with the messages every scenario error shares: file:line:col, the
// field, what is wrong.
func decodeYAML(file string, data []byte, v any) (map[string]*token.Position, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(file, err)
	}
	w := &walker{file: file, positions: map[string]*token.Position{}}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return nil, w.errorAt(doc.Body, "", "a scenario file holds one YAML document, found a second")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, &PositionError{File: file, Msg: "empty scenario file"}
	}
	if err := w.walk(body, reflect.TypeOf(v).Elem(), ""); err != nil {
		return nil, err
	}
	if err := yaml.NodeToValue(body, v, yaml.Strict()); err != nil {
		return nil, w.libraryError(err)
	}
	return w.positions, nil
}

// syntaxError reduces a parser error to one line with its position.
func syntaxError(file string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		return &PositionError{File: file, Line: p.Line, Column: p.Column, Msg: "YAML syntax error: " + ye.GetMessage()}
	}
	return &PositionError{File: file, Msg: "YAML syntax error: " + firstLine(err.Error())}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// libraryError places an error go-yaml returns after the walk has passed the file (the
// walk refuses everything it knows to refuse first), at the field its token belongs to.
func (w *walker) libraryError(err error) error {
	var pe *PositionError
	if errors.As(err, &pe) {
		return pe
	}
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		e := &PositionError{File: w.file, Line: p.Line, Column: p.Column, Msg: ye.GetMessage()}
		for path, at := range w.positions {
			if at.Line == p.Line && at.Column == p.Column && len(path) > len(e.Field) {
				e.Field = path
			}
		}
		return e
	}
	return &PositionError{File: w.file, Msg: firstLine(err.Error())}
}

// textType is the type of the fields that read themselves from a scalar's text
// (durations, clock times, addresses): go-yaml calls their UnmarshalText, and the walk
// checks the text first.
var textType = reflect.TypeFor[encoding.TextUnmarshaler]()

// UnmarshalYAML decodes a traffic entry for go-yaml: each key is a registered section,
// decoded into its generator's own spec. Validation refuses an entry that does not hold
// exactly one.
func (t *TrafficSpec) UnmarshalYAML(n ast.Node) error {
	for _, kv := range mappingPairs(n) {
		key, _ := scalarText(kv.Key)
		spec := generators[key].New()
		if err := yaml.NodeToValue(kv.Value, spec, yaml.Strict()); err != nil {
			return err
		}
		if t.found++; t.found == 1 {
			t.Section, t.Spec = key, spec
		}
	}
	return nil
}

// walker walks a file's syntax tree beside the Go type it decodes into.
type walker struct {
	file      string
	positions map[string]*token.Position
}

func (w *walker) errorAt(n ast.Node, field, format string, args ...any) error {
	e := &PositionError{File: w.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil && n.GetToken() != nil {
		e.Line, e.Column = n.GetToken().Position.Line, n.GetToken().Position.Column
	}
	return e
}

// unwrap strips comments and refuses anchors, aliases and tags: a scenario says what it
// means in place.
func (w *walker) unwrap(n ast.Node, path string) (ast.Node, error) {
	switch n.(type) {
	case nil, *ast.CommentGroupNode:
		return nil, nil
	case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode:
		return nil, w.errorAt(n, path, "anchors, aliases and merge keys are not supported in scenario files")
	case *ast.TagNode:
		return nil, w.errorAt(n, path, "YAML tags are not supported in scenario files")
	}
	return n, nil
}

func kindOf(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode:
		return "an integer"
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	case *ast.NullNode:
		return "null"
	}
	return "a string"
}

// scalarText is the source text of a scalar node, or false for collections.
func scalarText(n ast.Node) (string, bool) {
	switch t := n.(type) {
	case *ast.StringNode:
		return t.Value, true
	case *ast.LiteralNode:
		return t.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return t.GetToken().Value, true
	}
	return "", false
}

func tokenValue(n ast.Node) string {
	if t, ok := scalarText(n); ok {
		return t
	}
	return n.GetToken().Value
}

// mappingPairs is the key-value pairs of a mapping node, or nil for any other node.
func mappingPairs(n ast.Node) []*ast.MappingValueNode {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

// walk checks node n against type t at path and records the position of every field.
func (w *walker) walk(n ast.Node, t reflect.Type, path string) error {
	n, err := w.unwrap(n, path)
	if err != nil || n == nil {
		return err
	}
	if path != "" {
		w.positions[path] = n.GetToken().Position
	}
	if _, isNull := n.(*ast.NullNode); isNull {
		return w.errorAt(n, path, "a value is required")
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[TrafficSpec]():
		return w.walkTraffic(n, path)
	case reflect.PointerTo(t).Implements(textType):
		text, ok := scalarText(n)
		if !ok {
			return w.errorAt(n, path, "want a scalar, got %s", kindOf(n))
		}
		if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return w.errorAt(n, path, "%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.walkStruct(n, t, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return w.errorAt(n, path, "want a list, got %s", kindOf(n))
		}
		for i, item := range seq.Values {
			if err := w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.String:
		text, ok := scalarText(n)
		if !ok {
			return w.errorAt(n, path, "want a string, got %s", kindOf(n))
		}
		// An unquoted 007 is the number 7 to YAML, and the text "7" to go-yaml: say so
		// rather than change what the file wrote.
		if _, isString := n.(*ast.StringNode); !isString {
			var read string
			if err := yaml.NodeToValue(n, &read); err != nil || read != text {
				return w.errorAt(n, path, "YAML reads %s as %s %q; quote it to mean the text", text, kindOf(n), read)
			}
		}
		return nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return w.errorAt(n, path, "want an integer, got %s %q", kindOf(n), tokenValue(n))
		}
		if _, err := strconv.ParseInt(strings.ReplaceAll(in.Token.Value, "_", ""), 0, t.Bits()); err != nil {
			return w.errorAt(n, path, "integer %s out of range", in.Token.Value)
		}
		return nil
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return w.errorAt(n, path, "want a non-negative integer, got %s %q", kindOf(n), tokenValue(n))
		}
		if _, err := strconv.ParseUint(strings.ReplaceAll(in.Token.Value, "_", ""), 0, t.Bits()); err != nil {
			return w.errorAt(n, path, "want a non-negative integer that fits %d bits, got %s", t.Bits(), in.Token.Value)
		}
		return nil
	case reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			return w.errorAt(n, path, "want a number, got %s %q", kindOf(n), tokenValue(n))
		}
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.GetToken().Value, "_", ""), 64); err != nil {
			return w.errorAt(n, path, "bad number %s", n.GetToken().Value)
		}
		return nil
	case reflect.Bool:
		if _, ok := n.(*ast.BoolNode); !ok {
			return w.errorAt(n, path, "want true or false, got %s %q", kindOf(n), tokenValue(n))
		}
		return nil
	}
	return w.errorAt(n, path, "internal: cannot decode into %s", t)
}

// yamlFields maps the yaml tag names of a struct type to their field types; a field
// tagged ",inline" lends its own fields to the mapping (a shared group of settings).
func yamlFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case !f.IsExported():
		case name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			for n, ft := range yamlFields(f.Type) {
				fields[n] = ft
			}
		case name != "" && name != "-":
			fields[name] = f.Type
		}
	}
	return fields
}

// walkPairs walks the keys of a mapping node at path, each by the type known returns
// for it (false: an unknown field, whose message lists names).
func (w *walker) walkPairs(n ast.Node, path string, names []string, known func(string) (reflect.Type, bool)) error {
	pairs := mappingPairs(n)
	if pairs == nil {
		return w.errorAt(n, path, "want a mapping, got %s %q", kindOf(n), tokenValue(n))
	}
	for _, kv := range pairs {
		key, ok := scalarText(kv.Key)
		if !ok {
			return w.errorAt(kv.Key, path, "a mapping key must be a plain name")
		}
		field := key
		if path != "" {
			field = path + "." + key
		}
		t, ok := known(key)
		if !ok {
			return w.errorAt(kv.Key, field, "unknown field (known: %s)", strings.Join(names, ", "))
		}
		if err := w.walk(kv.Value, t, field); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) walkStruct(n ast.Node, t reflect.Type, path string) error {
	fields := yamlFields(t)
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	return w.walkPairs(n, path, names, func(key string) (reflect.Type, bool) {
		ft, ok := fields[key]
		return ft, ok
	})
}

// walkTraffic walks a traffic entry: its keys are the registered sections.
func (w *walker) walkTraffic(n ast.Node, path string) error {
	return w.walkPairs(n, path, Sections(), func(key string) (reflect.Type, bool) {
		kind, ok := generators[key]
		if !ok {
			return nil, false
		}
		return reflect.TypeOf(kind.New()), true
	})
}
