package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	yamlerr "github.com/goccy/go-yaml/token"
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

// scalarDecoder is implemented by field types that parse themselves from a YAML scalar's
// text (durations, clock times). The error's text becomes the message of a PositionError.
type scalarDecoder interface {
	decodeScalar(text string) error
}

// strictDecoder turns a YAML tree into Go values the strict way: an unknown field, a
// duplicate key, a wrong type, an anchor or alias all fail, each with its position. It
// records where every field was found so that later validation can point at it too.
type strictDecoder struct {
	file      string
	positions map[string]*yamlerr.Position
}

// decodeYAML parses data (from file, for messages) into v, a pointer to a struct.
func decodeYAML(file string, data []byte, v any) (map[string]*yamlerr.Position, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(file, err)
	}
	d := &strictDecoder{file: file, positions: map[string]*yamlerr.Position{}}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			return nil, d.errorAt(doc.Body, "", "a scenario file holds one YAML document, found a second")
		}
		body = doc.Body
	}
	if body == nil {
		return nil, &PositionError{File: file, Msg: "empty scenario file"}
	}
	if err := d.decode(body, reflect.ValueOf(v).Elem(), ""); err != nil {
		return nil, err
	}
	return d.positions, nil
}

// syntaxError reduces a parser error to one line with its position.
func syntaxError(file string, err error) error {
	var ye interface {
		GetToken() *yamlerr.Token
		GetMessage() string
	}
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

func (d *strictDecoder) errorAt(n ast.Node, field, format string, args ...any) error {
	e := &PositionError{File: d.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil && n.GetToken() != nil {
		e.Line, e.Column = n.GetToken().Position.Line, n.GetToken().Position.Column
	}
	return e
}

// unwrap strips comments and refuses anchors, aliases and tags: a scenario says what it
// means in place.
func (d *strictDecoder) unwrap(n ast.Node, path string) (ast.Node, error) {
	switch n.(type) {
	case nil, *ast.CommentGroupNode:
		return nil, nil
	case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode:
		return nil, d.errorAt(n, path, "anchors, aliases and merge keys are not supported in scenario files")
	case *ast.TagNode:
		return nil, d.errorAt(n, path, "YAML tags are not supported in scenario files")
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

func (d *strictDecoder) decode(n ast.Node, v reflect.Value, path string) error {
	n, err := d.unwrap(n, path)
	if err != nil {
		return err
	}
	if n == nil {
		return nil
	}
	if path != "" {
		d.positions[path] = n.GetToken().Position
	}
	if _, isNull := n.(*ast.NullNode); isNull {
		return d.errorAt(n, path, "a value is required")
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	}
	if t, ok := v.Addr().Interface().(*TrafficSpec); ok {
		return d.decodeTraffic(n, t, path)
	}
	if sd, ok := v.Addr().Interface().(scalarDecoder); ok {
		text, ok := scalarText(n)
		if !ok {
			return d.errorAt(n, path, "want a scalar, got %s", kindOf(n))
		}
		if err := sd.decodeScalar(text); err != nil {
			return d.errorAt(n, path, "%v", err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return d.errorAt(n, path, "want a list, got %s", kindOf(n))
		}
		out := reflect.MakeSlice(v.Type(), 0, len(seq.Values))
		for i, item := range seq.Values {
			elem := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(item, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
			out = reflect.Append(out, elem)
		}
		v.Set(out)
		return nil
	case reflect.String:
		text, ok := scalarText(n)
		if !ok {
			return d.errorAt(n, path, "want a string, got %s", kindOf(n))
		}
		v.SetString(text)
		return nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return d.errorAt(n, path, "want an integer, got %s %q", kindOf(n), tokenValue(n))
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(in.Token.Value, "_", ""), 0, v.Type().Bits())
		if err != nil {
			return d.errorAt(n, path, "integer %s out of range", in.Token.Value)
		}
		v.SetInt(i)
		return nil
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return d.errorAt(n, path, "want a non-negative integer, got %s %q", kindOf(n), tokenValue(n))
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(in.Token.Value, "_", ""), 0, v.Type().Bits())
		if err != nil {
			return d.errorAt(n, path, "want a non-negative integer that fits %d bits, got %s", v.Type().Bits(), in.Token.Value)
		}
		v.SetUint(u)
		return nil
	case reflect.Float64:
		switch n.(type) {
		case *ast.IntegerNode, *ast.FloatNode:
		default:
			return d.errorAt(n, path, "want a number, got %s %q", kindOf(n), tokenValue(n))
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.GetToken().Value, "_", ""), 64)
		if err != nil {
			return d.errorAt(n, path, "bad number %s", n.GetToken().Value)
		}
		v.SetFloat(f)
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return d.errorAt(n, path, "want true or false, got %s %q", kindOf(n), tokenValue(n))
		}
		v.SetBool(b.Value)
		return nil
	}
	return d.errorAt(n, path, "internal: cannot decode into %s", v.Type())
}

func tokenValue(n ast.Node) string {
	if t, ok := scalarText(n); ok {
		return t
	}
	return n.GetToken().Value
}

// yamlFields maps the yaml tag names of a struct type to field index paths; a field
// tagged ",inline" lends its own fields to the mapping (a shared group of settings).
func yamlFields(t reflect.Type) (map[string][]int, []string) {
	idx := map[string][]int{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() {
			continue
		}
		if name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct {
			inner, innerNames := yamlFields(f.Type)
			for n, path := range inner {
				idx[n] = append([]int{i}, path...)
			}
			names = append(names, innerNames...)
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		idx[name] = []int{i}
		names = append(names, name)
	}
	sort.Strings(names)
	return idx, names
}

func (d *strictDecoder) decodeStruct(n ast.Node, v reflect.Value, path string) error {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return d.errorAt(n, path, "want a mapping, got %s %q", kindOf(n), tokenValue(n))
	}
	idx, names := yamlFields(v.Type())
	seen := map[string]bool{}
	for _, kv := range pairs {
		key, ok := scalarText(kv.Key)
		if !ok {
			return d.errorAt(kv.Key, path, "a mapping key must be a plain name")
		}
		field := key
		if path != "" {
			field = path + "." + key
		}
		if seen[key] {
			return d.errorAt(kv.Key, field, "duplicate key")
		}
		seen[key] = true
		i, ok := idx[key]
		if !ok {
			return d.errorAt(kv.Key, field, "unknown field (known: %s)", strings.Join(names, ", "))
		}
		if err := d.decode(kv.Value, v.FieldByIndex(i), field); err != nil {
			return err
		}
	}
	return nil
}

// decodeTraffic decodes a traffic entry: a mapping whose keys are registered sections,
// each decoded into its generator's own spec. Validation refuses an entry that does not
// hold exactly one.
func (d *strictDecoder) decodeTraffic(n ast.Node, t *TrafficSpec, path string) error {
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		return d.errorAt(n, path, "want a mapping, got %s %q", kindOf(n), tokenValue(n))
	}
	seen := map[string]bool{}
	for _, kv := range pairs {
		key, ok := scalarText(kv.Key)
		if !ok {
			return d.errorAt(kv.Key, path, "a mapping key must be a plain name")
		}
		field := path + "." + key
		if seen[key] {
			return d.errorAt(kv.Key, field, "duplicate key")
		}
		seen[key] = true
		kind, ok := generators[key]
		if !ok {
			return d.errorAt(kv.Key, field, "unknown field (known: %s)", strings.Join(Sections(), ", "))
		}
		spec := kind.New()
		if err := d.decode(kv.Value, reflect.ValueOf(spec).Elem(), field); err != nil {
			return err
		}
		if t.found++; t.found == 1 {
			t.Section, t.Spec = key, spec
		}
	}
	return nil
}
