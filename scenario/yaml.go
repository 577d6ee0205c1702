package scenario

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
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

// The bounds of a scenario file, each refused with an error naming file:line:col: a file
// within them parses in time linear in its size and in memory a small multiple of it.
const (
	// MaxFileBytes is the largest scenario file: 128 MiB, room for two million script
	// lines written one per line.
	MaxFileBytes = 128 << 20
	// MaxTreeBytes bounds the part of a file read as a YAML tree, which costs over a
	// hundred bytes of memory per byte of text: everything but the lists written one
	// flow mapping per line ("- {at: 1s, key: u}"), which are read line by line.
	MaxTreeBytes = 1 << 20
	// MaxDepth is the deepest nesting of mappings and lists; the built-in scenarios
	// nest six at most.
	MaxDepth = 32
	// MaxEntries is the number of list entries (script lines, traffic sections, ...)
	// one file may hold.
	MaxEntries = 2_000_000
)

// decodeYAML decodes text (from file, for messages) into v, a pointer to a struct, and
// returns where every field was found, by its path ("traffic[0].poisson.rate").
//
// goccy/go-yaml parses (a duplicate key is its syntax error); one walk over its syntax
// tree beside v's type then decodes, in strict mode: an unknown field, a wrong type, a
// float truncated into an integer, a quoted number, a null, an anchor, an alias or a tag
// is refused with the messages every scenario error shares: file:line:col, the field,
// what is wrong. The scalar types of this package read their text through UnmarshalText.
//
// A list written one flow mapping of plain or simply quoted scalars per line — how a
// recorded trace is written as a script — is left out of the tree and read line by line
// (stream.go): each line becomes the syntax tree of its one mapping when the walk reaches
// the list, and is decoded by the same walk, so a million lines cost a million small
// trees, not one large one; streams false reads them as part of the tree.
func decodeYAML(file, text string, v any, streams bool) (*places, error) {
	if len(text) > MaxFileBytes {
		line, col := lineCol(text, MaxFileBytes)
		return nil, &PositionError{File: file, Line: line, Column: col,
			Msg: fmt.Sprintf("a scenario file holds at most %d MiB; this one is longer", MaxFileBytes>>20)}
	}
	// YAML reads a CRLF as a line break, as the parser does, except after a comment,
	// where it counts two lines.
	if strings.Contains(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	none := func(int) bool { return false }
	take := func(int) bool { return streams }
	places, err := decodeTree(file, text, v, take)
	var lost *notLists
	if errors.As(err, &lost) {
		// What the line reader took for a list is no list in the tree (it sits in a
		// block scalar, say): read it as part of the tree, and if the tree then moves
		// another, read the whole file as a tree.
		skip := map[int]bool{}
		for _, l := range lost.keyLines {
			skip[l] = true
		}
		take = func(keyLine int) bool { return !skip[keyLine] }
		if places, err = decodeTree(file, text, v, take); errors.As(err, &lost) {
			places, err = decodeTree(file, text, v, none)
		}
	}
	var syntax *cutSyntaxError
	if errors.As(err, &syntax) {
		// Where a parser lost its way in a broken file depends on all of it: a file
		// small enough is read whole for the parser's own account, a larger one has
		// the first error of the text read as a tree or of the lines read alone.
		if len(text) <= MaxTreeBytes {
			return decodeTree(file, text, v, none)
		}
		return nil, syntax.err
	}
	return places, err
}

// cutSyntaxError is a syntax error in a file with lists cut out.
type cutSyntaxError struct{ err error }

func (e *cutSyntaxError) Error() string { return e.err.Error() }

// notLists names the lists cut out of a file, by their keys' lines, that were not lists
// in its tree.
type notLists struct{ keyLines []int }

func (e *notLists) Error() string {
	return fmt.Sprintf("the lists whose keys are on lines %v are not lists of the tree", e.keyLines)
}

// decodeTree decodes text into v, reading the lists cutStreams finds line by line where
// take says so of the line of their key.
func decodeTree(file, text string, v any, take func(keyLine int) bool) (*places, error) {
	cut := cutStreams(text, take)
	if cut.treeBytes > MaxTreeBytes {
		return nil, &PositionError{File: file, Line: cut.treeLimitLine, Column: 1, Msg: fmt.Sprintf(
			"more than %d MiB of this file is read as a YAML tree, which holds over a hundred bytes of memory per byte; "+
				"write long lists one entry per line as - {at: 1s, key: u}, which are read line by line", MaxTreeBytes>>20)}
	}
	tokens := lexer.Tokenize(cut.tree)
	if err := checkDepth(file, tokens); err != nil {
		return nil, err
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		err = syntaxError(file, err)
		if d := cut.duplicate; d != nil {
			if pe, ok := err.(*PositionError); !ok || pe.Line == 0 || d.Line < pe.Line {
				err = d.at(file)
			}
		}
		if len(cut.streams) > 0 {
			return nil, &cutSyntaxError{err}
		}
		return nil, err
	}
	if cut.duplicate != nil {
		return nil, &cutSyntaxError{cut.duplicate.at(file)}
	}
	w := &walker{file: file, places: &places{tree: map[string]*token.Position{}, text: text}, record: true}
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
	if len(cut.streams) > 0 {
		if w.streams, err = placeStreams(body, cut.streams); err != nil {
			return nil, err
		}
	}
	if err := w.walk(body, reflect.ValueOf(v).Elem(), ""); err != nil {
		return nil, err
	}
	return w.places, nil
}

// lineCol is the 1-based line and column (in characters) of byte offset off of data.
func lineCol(text string, off int) (int, int) {
	off = min(off, len(text))
	line := 1 + strings.Count(text[:off], "\n")
	start := strings.LastIndexByte(text[:off], '\n') + 1
	return line, 1 + utf8.RuneCountInString(text[start:off])
}

// checkDepth refuses a file nested deeper than MaxDepth before the parser, whose memory
// grows with the square of the depth, sees it. A block collection opens at the column of
// its first key or dash and closes at the first line that starts left of it; a flow
// collection opens at its bracket and closes at its match.
func checkDepth(file string, tokens token.Tokens) error {
	type open struct {
		col int
		seq bool
	}
	var block []open
	flow := 0
	for i, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		var at *token.Token
		seq := false
		switch {
		case flow > 0:
		case tk.Type == token.SequenceEntryType:
			at, seq = tk, true
		case tk.Type == token.MappingValueType && i > 0:
			at = tokens[i-1]
		}
		if at != nil {
			col := at.Position.Column
			for len(block) > 0 && block[len(block)-1].col > col {
				block = block[:len(block)-1]
			}
			top := len(block) - 1
			switch {
			case top < 0 || block[top].col < col:
				block = append(block, open{col, seq})
			case block[top].seq == seq:
				// another entry or key of the same collection
			case seq:
				// a list written at its key's column ("key:\n- a")
				block = append(block, open{col, seq})
			default:
				// a key after such a list: the list has closed
				block = block[:top]
				if len(block) == 0 || block[len(block)-1].col < col || block[len(block)-1].seq {
					block = append(block, open{col, false})
				}
			}
		}
		if depth := len(block) + flow; depth > MaxDepth {
			return &PositionError{File: file, Line: tk.Position.Line, Column: tk.Position.Column,
				Msg: fmt.Sprintf("nested more than %d levels deep; a scenario nests at most a handful", MaxDepth)}
		}
	}
	return nil
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

// textType is the type of the fields that read themselves from a scalar's text
// (durations, clock times, addresses): the walk calls their UnmarshalText.
var textType = reflect.TypeFor[encoding.TextUnmarshaler]()

var trafficSpecType = reflect.TypeFor[TrafficSpec]()

// walker walks a file's syntax tree beside the Go value it decodes into.
type walker struct {
	file   string
	places *places
	// record says to note each field's position in places.tree; a streamed list's
	// lines are found again when asked instead.
	record bool
	// streams are the lists read line by line, by the position of their stand-in in
	// the tree.
	streams map[*ast.SequenceNode]*stream
	// entries counts the list entries decoded so far, against MaxEntries.
	entries int
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

// mappingPairs is the key-value pairs of a mapping node; false for any other node.
func mappingPairs(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

// walk decodes node n into v at path, checking it against v's type, and records the
// position of every field.
func (w *walker) walk(n ast.Node, v reflect.Value, path string) error {
	n, err := w.unwrap(n, path)
	if err != nil || n == nil {
		return err
	}
	if w.record && path != "" {
		w.places.tree[path] = n.GetToken().Position
	}
	if _, isNull := n.(*ast.NullNode); isNull {
		return w.errorAt(n, path, "a value is required")
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	t := v.Type()
	switch {
	case t == trafficSpecType:
		return w.walkTraffic(n, v.Addr().Interface().(*TrafficSpec), path)
	case t == faultSpecType:
		return w.walkFault(n, v.Addr().Interface().(*FaultSpec), path)
	case reflect.PointerTo(t).Implements(textType):
		text, ok := scalarText(n)
		if !ok {
			return w.errorAt(n, path, "want a scalar, got %s", kindOf(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(text)); err != nil {
			return w.errorAt(n, path, "%v", err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return w.walkStruct(n, v, path)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			return w.errorAt(n, path, "want a list, got %s", kindOf(n))
		}
		if s := w.streams[seq]; s != nil {
			return w.walkStream(s, v, path)
		}
		v.Set(reflect.MakeSlice(t, len(seq.Values), len(seq.Values)))
		for i, item := range seq.Values {
			if err := w.countEntry(item, path); err != nil {
				return err
			}
			if err := w.walk(item, v.Index(i), path+"["+strconv.Itoa(i)+"]"); err != nil {
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
			if _, isLiteral := n.(*ast.LiteralNode); !isLiteral {
				var read string
				if err := yaml.NodeToValue(n, &read); err != nil || read != text {
					return w.errorAt(n, path, "YAML reads %s as %s %q; quote it to mean the text", text, kindOf(n), read)
				}
			}
		}
		v.SetString(text)
		return nil
	case reflect.Int, reflect.Int64, reflect.Int32:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return w.errorAt(n, path, "want an integer, got %s %q", kindOf(n), tokenValue(n))
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(in.Token.Value, "_", ""), 0, t.Bits())
		if err != nil {
			return w.errorAt(n, path, "integer %s out of range", in.Token.Value)
		}
		// go-yaml's reading of the integer (its octal and hexadecimal forms) is the
		// one files have always had.
		switch read := in.Value.(type) {
		case int64:
			i = read
		case uint64:
			i = int64(read)
		}
		v.SetInt(i)
		return nil
	case reflect.Uint64, reflect.Uint32, reflect.Uint:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			return w.errorAt(n, path, "want a non-negative integer, got %s %q", kindOf(n), tokenValue(n))
		}
		u, err := strconv.ParseUint(strings.ReplaceAll(in.Token.Value, "_", ""), 0, t.Bits())
		if err != nil {
			return w.errorAt(n, path, "want a non-negative integer that fits %d bits, got %s", t.Bits(), in.Token.Value)
		}
		switch read := in.Value.(type) {
		case int64:
			u = uint64(read)
		case uint64:
			u = read
		}
		v.SetUint(u)
		return nil
	case reflect.Float64:
		var f float64
		switch num := n.(type) {
		case *ast.FloatNode:
			f = num.Value
		case *ast.IntegerNode:
			switch read := num.Value.(type) {
			case int64:
				f = float64(read)
			case uint64:
				f = float64(read)
			}
		default:
			return w.errorAt(n, path, "want a number, got %s %q", kindOf(n), tokenValue(n))
		}
		if _, err := strconv.ParseFloat(strings.ReplaceAll(n.GetToken().Value, "_", ""), 64); err != nil {
			return w.errorAt(n, path, "bad number %s", n.GetToken().Value)
		}
		v.SetFloat(f)
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return w.errorAt(n, path, "want true or false, got %s %q", kindOf(n), tokenValue(n))
		}
		v.SetBool(b.Value)
		return nil
	}
	return w.errorAt(n, path, "internal: cannot decode into %s", t)
}

// countEntry counts one more list entry, n, against MaxEntries.
func (w *walker) countEntry(n ast.Node, path string) error {
	if w.entries++; w.entries > MaxEntries {
		return w.errorAt(n, path, "more than %d list entries in one file", MaxEntries)
	}
	return nil
}

// structFields is a struct type's fields by their yaml names, and the names sorted for
// messages; a field tagged ",inline" lends its own fields to the mapping (a shared group
// of settings).
type structFields struct {
	index map[string][]int
	names []string
}

var fieldsCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldsCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{index: map[string][]int{}}
	addFields(t, nil, f.index)
	for name := range f.index {
		f.names = append(f.names, name)
	}
	slices.Sort(f.names)
	fieldsCache.Store(t, f)
	return f
}

func addFields(t reflect.Type, at []int, index map[string][]int) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		path := append(slices.Clip(at), i)
		switch {
		case !f.IsExported():
		case name == "" && opts == "inline" && f.Type.Kind() == reflect.Struct:
			addFields(f.Type, path, index)
		case name != "" && name != "-":
			index[name] = path
		}
	}
}

// walkPairs walks the keys of a mapping node at path, each into the value field returns
// for it (false: an unknown field, whose message lists names).
func (w *walker) walkPairs(n ast.Node, path string, names []string, field func(string) (reflect.Value, bool)) error {
	pairs, ok := mappingPairs(n)
	if !ok {
		return w.errorAt(n, path, "want a mapping, got %s %q", kindOf(n), tokenValue(n))
	}
	for _, kv := range pairs {
		key, ok := scalarText(kv.Key)
		if !ok {
			return w.errorAt(kv.Key, path, "a mapping key must be a plain name")
		}
		at := key
		if path != "" {
			at = path + "." + key
		}
		v, ok := field(key)
		if !ok {
			return w.errorAt(kv.Key, at, "unknown field (known: %s)", strings.Join(names, ", "))
		}
		if err := w.walk(kv.Value, v, at); err != nil {
			return err
		}
	}
	return nil
}

func (w *walker) walkStruct(n ast.Node, v reflect.Value, path string) error {
	fields := fieldsOf(v.Type())
	return w.walkPairs(n, path, fields.names, func(key string) (reflect.Value, bool) {
		index, ok := fields.index[key]
		if !ok {
			return reflect.Value{}, false
		}
		return v.FieldByIndex(index), true
	})
}

// walkTraffic decodes a traffic entry: each key is a registered section, decoded into its
// generator's own spec. Validation refuses an entry that does not hold exactly one.
func (w *walker) walkTraffic(n ast.Node, t *TrafficSpec, path string) error {
	return w.walkPairs(n, path, Sections(), func(key string) (reflect.Value, bool) {
		kind, ok := generators[key]
		if !ok {
			return reflect.Value{}, false
		}
		spec := kind.New()
		if t.found++; t.found == 1 {
			t.Section, t.Spec = key, spec
		}
		return reflect.ValueOf(spec).Elem(), true
	})
}
