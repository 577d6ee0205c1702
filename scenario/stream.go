package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// A list written one flow mapping per line, as a recorded trace is written as a script,
//
//	  - script:
//	      - {at: 59.9s, count: 100, key: user_8812}
//	      - {at: "10:01:00.100", key: user_8812}   # comments and blank lines may come between
//
// is read line by line rather than as part of the file's syntax tree, which holds over a
// hundred bytes for each byte of text: cutStreams finds such lists and leaves in their
// place a stand-in, `[{}]` on the key's line, with the lines of the file kept, so that
// everything else keeps its line and column; the walk, reaching the stand-in, decodes
// each line as the one-mapping tree its text makes. A line is taken only in a form whose
// reading is certain — plain keys, plain scalars of a safe alphabet, quoted strings
// without escapes, go-yaml's own reading of each scalar — and a list with any other line
// stays in the tree, so a file reads the same either way (FuzzStreamEqualsTree).

// stream is one list read line by line.
type stream struct {
	// keyLine and keyCol are the list's key, the stand-in is at line, col (1-based).
	keyLine, keyCol int
	line, col       int
	// indent is the 0-based column of every entry's dash.
	indent int
	// starts are the byte offsets of the entries' lines, lines their line numbers.
	starts []int32
	lines  []int32
	// placed says the stand-in is in the tree.
	placed bool
	// path is the list's field, set when the walk reaches it.
	path string
}

// duplicateKey is a key written twice in one streamed line: the parser's syntax error.
type duplicateKey struct {
	Line, Column int
	key          string
	first        int // the first one's column, on the same line
}

func (d *duplicateKey) at(file string) error {
	return &PositionError{File: file, Line: d.Line, Column: d.Column,
		Msg: fmt.Sprintf("YAML syntax error: mapping key %q already defined at [%d:%d]", d.key, d.Line, d.first)}
}

// cutText is a file with its streamed lists cut out.
type cutText struct {
	// tree is the text the parser reads: the file with every streamed list's lines empty
	// and its key followed by the stand-in.
	tree    string
	streams []*stream
	// treeBytes counts the bytes of the file in the tree; treeLimitLine is the line on
	// which they pass MaxTreeBytes.
	treeBytes, treeLimitLine int
	duplicate                *duplicateKey
}

// cutStreams finds the lists of text that can be read line by line and cuts out those
// take says to, by the line of their key.
func cutStreams(text string, take func(keyLine int) bool) cutText {
	var c cutText
	var out []byte // the tree from the first cut on; until then the tree is text itself
	copied := 0    // text[:copied] is in out
	entries := 0
	for off, lineNo := 0, 1; off < len(text); {
		line, next := lineAt(text, off)
		if keyIndent, colon, ok := listKey(line); ok && take(lineNo) {
			if s, end, endLine := c.scan(text, next, lineNo+1, keyIndent, &entries); s != nil {
				s.keyLine, s.keyCol = lineNo, keyIndent+1
				s.line, s.col = lineNo, colon+3
				c.streams = append(c.streams, s)
				if out == nil {
					out = make([]byte, 0, len(text)/8)
				}
				out = append(out, text[copied:off]...)
				out = append(out, line[:colon+1]...)
				out = append(out, " [{}]\n"...)
				out = append(out, strings.Repeat("\n", endLine-lineNo-1)...)
				copied = end
				c.addTree(next-off, lineNo)
				off, lineNo = end, endLine
				continue
			}
		}
		c.addTree(next-off, lineNo)
		off, lineNo = next, lineNo+1
	}
	if out == nil {
		c.tree = text
	} else {
		c.tree = string(append(out, text[copied:]...))
	}
	return c
}

func (c *cutText) addTree(n, line int) {
	c.treeBytes += n
	if c.treeBytes > MaxTreeBytes && c.treeLimitLine == 0 {
		c.treeLimitLine = line
	}
}

// scan reads the list whose key, at column keyIndent (0-based), ends the line before
// offset from (line lineNo), and returns it with the offset and line number just past
// its last entry; nil when the lines that follow are not such a list. entries counts
// the lines kept across lists, up to MaxEntries and one more, which the walk refuses
// (and each list's first).
func (c *cutText) scan(text string, from, lineNo, keyIndent int, entries *int) (*stream, int, int) {
	s := &stream{indent: -1}
	end, endLine := from, lineNo
	var l flowLine
	var dup *duplicateKey
	for off := from; off < len(text); lineNo++ {
		line, next := lineAt(text, off)
		start := off
		off = next
		body := strings.TrimLeft(line, " ")
		if body == "" || body[0] == '#' {
			continue
		}
		indent := len(line) - len(body)
		entry := body == "-" || strings.HasPrefix(body, "- ")
		if s.indent < 0 {
			if !entry || indent < keyIndent {
				return nil, 0, 0
			}
			s.indent = indent
		}
		if !entry || indent != s.indent {
			// The first line that is not an entry must close the list.
			if body[0] != '\t' && (indent < s.indent || indent == keyIndent && !entry) {
				break
			}
			return nil, 0, 0
		}
		if !l.parse(line, s.indent) {
			return nil, 0, 0
		}
		if d := l.duplicate(lineNo); d != nil && dup == nil {
			dup = d
		}
		if *entries <= MaxEntries || len(s.starts) == 0 {
			*entries++
			s.starts = append(s.starts, int32(start))
			s.lines = append(s.lines, int32(lineNo))
		}
		end, endLine = next, lineNo+1
	}
	if s.indent < 0 {
		return nil, 0, 0
	}
	if dup != nil && (c.duplicate == nil) {
		c.duplicate = dup
	}
	return s, end, endLine
}

// lineAt is the line of text that starts at off, without its line break, and the offset
// of the next line.
func lineAt(text string, off int) (string, int) {
	end := strings.IndexByte(text[off:], '\n')
	next := len(text)
	if end < 0 {
		end = len(text)
	} else {
		end += off
		next = end + 1
	}
	return strings.TrimSuffix(text[off:end], "\r"), next
}

// listKey reports whether line is a key with nothing after it but a comment — `key:` or
// `- key:` — and gives its 0-based column and that of its colon.
func listKey(line string) (keyIndent, colon int, ok bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if strings.HasPrefix(line[i:], "- ") {
		for i += 2; i < len(line) && line[i] == ' '; i++ {
		}
	}
	keyIndent = i
	if i >= len(line) || !isNameStart(line[i]) {
		return 0, 0, false
	}
	for i < len(line) && isNameByte(line[i]) {
		i++
	}
	if i >= len(line) || line[i] != ':' {
		return 0, 0, false
	}
	colon = i
	rest := strings.TrimLeft(line[i+1:], " ")
	if rest != "" && (rest[0] != '#' || len(rest) == len(line)-i-1) {
		return 0, 0, false
	}
	return keyIndent, colon, true
}

// reservedKey reports whether a name is one YAML reads as other than text.
func reservedKey(name string) bool {
	switch strings.ToLower(name) {
	case "true", "false", "null":
		return true
	}
	return false
}

func isNameStart(b byte) bool {
	return b == '_' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

func isNameByte(b byte) bool { return isNameStart(b) || '0' <= b && b <= '9' }

// isPlainStart and isPlainByte are the alphabet of the plain scalars a streamed line may
// hold: no indicator YAML gives a meaning to, so that the scalar is its text.
func isPlainStart(b byte) bool {
	return isNameByte(b) || b == '.' || b == '+' || b == '-' || b == '~'
}

func isPlainByte(b byte) bool {
	return isPlainStart(b) || b == '/' || b == ':' || b == '@' || b == '%'
}

// flowPair is one key and value of a streamed line, with their 1-based columns.
type flowPair struct {
	key              string
	value            string
	keyCol, valueCol int
	quote            byte // 0 for a plain scalar, else '"' or '\''
}

// flowLine is a streamed line: an entry `- {key: value, ...}`.
type flowLine struct {
	brace int // the column of the `{`
	pairs []flowPair
}

// parse reads line, whose dash is at byte indent, as an entry holding one flow mapping
// of scalars, and reports whether it is one in the form streams take.
func (l *flowLine) parse(line string, indent int) bool {
	l.pairs = l.pairs[:0]
	i := indent + 1
	if i >= len(line) || line[indent] != '-' || line[i] != ' ' {
		return false
	}
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i >= len(line) || line[i] != '{' {
		return false
	}
	l.brace = i + 1
	i++
	// wide counts the bytes past the first of each character, since columns count
	// characters; only quoted strings may hold characters of more than one byte.
	wide := 0
	skip := func() {
		for i < len(line) && line[i] == ' ' {
			i++
		}
	}
	skip()
	for i < len(line) && line[i] != '}' {
		var p flowPair
		if !isNameStart(line[i]) {
			return false
		}
		start := i
		for i < len(line) && isNameByte(line[i]) {
			i++
		}
		p.key, p.keyCol = line[start:i], start-wide+1
		if reservedKey(p.key) {
			return false
		}
		if i+1 >= len(line) || line[i] != ':' || line[i+1] != ' ' {
			return false
		}
		i++
		skip()
		if i >= len(line) {
			return false
		}
		p.valueCol = i - wide + 1
		switch q := line[i]; {
		case q == '"' || q == '\'':
			end := strings.IndexByte(line[i+1:], q)
			if end < 0 {
				return false
			}
			v := line[i+1 : i+1+end]
			for j := 0; j < len(v); j++ {
				if v[j] < ' ' || v[j] == '\\' || v[j] == 0x7f {
					return false
				}
			}
			if !utf8.ValidString(v) {
				return false
			}
			i += end + 2
			if i < len(line) && line[i] == q {
				return false // '' or an unbalanced quote
			}
			p.value, p.quote = v, q
			wide += len(v) - utf8.RuneCountInString(v)
		case isPlainStart(q):
			start := i
			for i < len(line) && isPlainByte(line[i]) {
				i++
			}
			p.value = line[start:i]
			if p.value[len(p.value)-1] == ':' {
				return false
			}
		default:
			return false
		}
		skip()
		l.pairs = append(l.pairs, p)
		if i >= len(line) {
			return false
		}
		switch line[i] {
		case ',':
			i++
			skip()
		case '}':
		default:
			return false
		}
	}
	if i >= len(line) {
		return false
	}
	i++
	rest := strings.TrimLeft(line[i:], " ")
	return rest == "" || rest[0] == '#' && len(rest) < len(line)-i
}

// duplicate is the line's second writing of a key, if any, as the parser reports it.
func (l *flowLine) duplicate(line int) *duplicateKey {
	for j, p := range l.pairs {
		for _, q := range l.pairs[:j] {
			if q.key == p.key {
				return &duplicateKey{Line: line, Column: p.keyCol, key: p.key, first: q.keyCol}
			}
		}
	}
	return nil
}

// lineTree is the syntax tree of one streamed line, kept from line to line: the walk
// holds nothing of a tree it has decoded, so the next line's can take its place.
type lineTree struct {
	start   token.Token
	pos     token.Position
	mapping ast.MappingNode
	base    ast.BaseNode
	pairs   []*pairTree
}

type pairTree struct {
	value     ast.MappingValueNode
	colon     token.Token
	key, text ast.StringNode
	number    ast.IntegerNode
	keyTk     token.Token
	textTk    token.Token
	keyPos    token.Position
	textPos   token.Position
	base      [3]ast.BaseNode
}

// node is the syntax tree the parser makes of the line's mapping, at line.
func (t *lineTree) node(l *flowLine, line int) ast.Node {
	for len(t.pairs) < len(l.pairs) {
		t.pairs = append(t.pairs, new(pairTree))
	}
	values := t.mapping.Values[:0]
	for j, p := range l.pairs {
		pt := t.pairs[j]
		pt.keyPos = token.Position{Line: line, Column: p.keyCol}
		pt.keyTk = token.Token{Type: token.StringType, CharacterType: token.CharacterTypeMiscellaneous,
			Indicator: token.NotIndicator, Value: p.key, Origin: p.key, Position: &pt.keyPos}
		pt.base[0] = ast.BaseNode{}
		pt.key = ast.StringNode{BaseNode: &pt.base[0], Token: &pt.keyTk, Value: p.key}
		pt.textPos = token.Position{Line: line, Column: p.valueCol}
		var value ast.Node
		switch {
		case p.quote == '"':
			value = ast.String(token.DoubleQuote(p.value, `"`+p.value+`"`, &pt.textPos))
		case p.quote == '\'':
			value = ast.String(token.SingleQuote(p.value, "'"+p.value+"'", &pt.textPos))
		case plainText(p.value):
			// what token.New makes of text that cannot be a keyword or a number,
			// without its search for one
			pt.textTk = token.Token{Type: token.StringType, CharacterType: token.CharacterTypeMiscellaneous,
				Indicator: token.NotIndicator, Value: p.value, Origin: p.value, Position: &pt.textPos}
			pt.base[1] = ast.BaseNode{}
			pt.text = ast.StringNode{BaseNode: &pt.base[1], Token: &pt.textTk, Value: p.value}
			value = &pt.text
		case decimal(p.value):
			// and of a decimal number: go-yaml reads it as an unsigned integer
			u, err := strconv.ParseUint(p.value, 10, 64)
			if err != nil {
				value = scalarNode(token.New(p.value, p.value, &pt.textPos))
				break
			}
			pt.textTk = token.Token{Type: token.IntegerType, CharacterType: token.CharacterTypeMiscellaneous,
				Indicator: token.NotIndicator, Value: p.value, Origin: p.value, Position: &pt.textPos}
			pt.base[1] = ast.BaseNode{}
			pt.number = ast.IntegerNode{BaseNode: &pt.base[1], Token: &pt.textTk, Value: u}
			value = &pt.number
		default:
			value = scalarNode(token.New(p.value, p.value, &pt.textPos))
		}
		pt.colon = token.Token{Type: token.MappingValueType, CharacterType: token.CharacterTypeIndicator,
			Indicator: token.BlockStructureIndicator, Value: ":", Origin: ":", Position: &pt.textPos}
		pt.base[2] = ast.BaseNode{}
		pt.value = ast.MappingValueNode{BaseNode: &pt.base[2], Start: &pt.colon, Key: &pt.key, Value: value, IsFlowStyle: true}
		values = append(values, &pt.value)
	}
	t.pos = token.Position{Line: line, Column: l.brace}
	t.start = token.Token{Type: token.MappingStartType, CharacterType: token.CharacterTypeIndicator,
		Indicator: token.FlowCollectionIndicator, Value: "{", Origin: "{", Position: &t.pos}
	t.base = ast.BaseNode{}
	t.mapping = ast.MappingNode{BaseNode: &t.base, Start: &t.start, End: &t.start, IsFlowStyle: true, Values: values}
	return &t.mapping
}

// plainText reports whether go-yaml reads a plain scalar of the streamed alphabet as
// text without a doubt: it starts as a name does and is no keyword, or it ends in a
// letter no number can end in.
func plainText(v string) bool {
	if isNameStart(v[0]) {
		return !reservedKey(v)
	}
	last := v[len(v)-1]
	return ('g' <= last && last <= 'z' || 'G' <= last && last <= 'Z') && '0' <= v[0] && v[0] <= '9'
}

// decimal reports whether v is a decimal integer without sign or leading zero.
func decimal(v string) bool {
	if v == "0" {
		return true
	}
	if v[0] < '1' || v[0] > '9' {
		return false
	}
	for i := 1; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// scalarNode is the parser's node for a scalar token.
func scalarNode(tk *token.Token) ast.Node {
	switch tk.Type {
	case token.NullType:
		return ast.Null(tk)
	case token.BoolType:
		return ast.Bool(tk)
	case token.IntegerType, token.BinaryIntegerType, token.OctetIntegerType, token.HexIntegerType:
		return ast.Integer(tk)
	case token.FloatType:
		return ast.Float(tk)
	case token.InfinityType:
		return ast.Infinity(tk)
	case token.NanType:
		return ast.Nan(tk)
	}
	return ast.String(tk)
}

// placeStreams finds each stream's stand-in in the tree: the flow list `[{}]` that is
// the value of its key in a block mapping. The streams whose stand-in is missing from
// the tree (the list sat in a block scalar, say) are a *notLists.
func placeStreams(body ast.Node, streams []*stream) (map[*ast.SequenceNode]*stream, error) {
	type place struct{ line, col int }
	want := map[place]*stream{}
	for _, s := range streams {
		want[place{s.keyLine, s.keyCol}] = s
	}
	found := map[*ast.SequenceNode]*stream{}
	ast.Walk(visitor(func(n ast.Node) {
		mv, ok := n.(*ast.MappingValueNode)
		if !ok || mv.IsFlowStyle || mv.Key == nil || mv.Key.GetToken() == nil {
			return
		}
		kp := mv.Key.GetToken().Position
		s := want[place{kp.Line, kp.Column}]
		seq, ok := mv.Value.(*ast.SequenceNode)
		if s == nil || !ok || !seq.IsFlowStyle || len(seq.Values) != 1 {
			return
		}
		if sp := seq.GetToken().Position; sp.Line == s.line && sp.Column == s.col && found[seq] == nil {
			// The list as the tree has it starts at its first dash.
			seq.Start = token.SequenceEntry("-", &token.Position{Line: int(s.lines[0]), Column: s.indent + 1})
			s.placed = true
			found[seq] = s
		}
	}), body)
	if len(found) != len(streams) {
		lost := &notLists{}
		for _, s := range streams {
			if !s.placed {
				lost.keyLines = append(lost.keyLines, s.keyLine)
			}
		}
		return nil, lost
	}
	return found, nil
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor {
	v(n)
	return v
}

// walkStream decodes a stream's lines into v, a slice, at path.
func (w *walker) walkStream(s *stream, v reflect.Value, path string) error {
	s.path = path
	w.places.streams = append(w.places.streams, s)
	n := len(s.starts)
	v.Set(reflect.MakeSlice(v.Type(), n, n))
	record := w.record
	w.record = false
	defer func() { w.record = record }()
	var l flowLine
	var tree lineTree
	for j, start := range s.starts {
		line, _ := lineAt(w.places.text, int(start))
		if !l.parse(line, s.indent) {
			return errors.New("internal: a streamed line no longer parses")
		}
		node := tree.node(&l, int(s.lines[j]))
		if err := w.countEntry(node, path); err != nil {
			return err
		}
		if err := w.walk(node, v.Index(j), path+"["+strconv.Itoa(j)+"]"); err != nil {
			return err
		}
	}
	return nil
}

// places says where each field of a file is, by its path ("traffic[0].script[3].at"):
// the fields read as a tree in a map, those of a streamed list found again in its line.
type places struct {
	tree    map[string]*token.Position
	streams []*stream
	text    string
}

// at is the position of field's value, or nil when the file does not write it.
func (p *places) at(field string) *token.Position {
	if p == nil {
		return nil
	}
	if pos := p.tree[field]; pos != nil {
		return pos
	}
	for _, s := range p.streams {
		if pos := s.at(p.text, field); pos != nil {
			return pos
		}
	}
	return nil
}

// at is the position of field inside the stream: an entry ("…[3]") or one of its keys'
// values ("…[3].at").
func (s *stream) at(text, field string) *token.Position {
	rest, ok := strings.CutPrefix(field, s.path+"[")
	if s.path == "" || !ok {
		return nil
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return nil
	}
	j, err := strconv.Atoi(rest[:end])
	if err != nil || j < 0 || j >= len(s.starts) {
		return nil
	}
	rest = rest[end+1:]
	var l flowLine
	line, _ := lineAt(text, int(s.starts[j]))
	l.parse(line, s.indent)
	if rest == "" {
		return &token.Position{Line: int(s.lines[j]), Column: l.brace}
	}
	for _, p := range l.pairs {
		if "."+p.key == rest {
			return &token.Position{Line: int(s.lines[j]), Column: p.valueCol}
		}
	}
	return nil
}
