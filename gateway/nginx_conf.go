package gateway

import (
	"fmt"
	"path/filepath"
	"strings"
)

// ngxDirective is one directive of an nginx configuration: its name and arguments as
// nginx reads them (quotes removed, escapes applied), where it is, and its block.
type ngxDirective struct {
	name     string
	args     []string
	at       Place  // as findings name it
	path     string // the file as opened, for errors
	hasBlock bool
	block    []*ngxDirective
}

// ngxWord is one word of a directive and the line it starts on.
type ngxWord struct {
	text string
	line int
}

// What ends the words ngxLexer.next returns.
const (
	ngxEndDirective  = iota // ';'
	ngxEndBlockStart        // '{'
	ngxEndBlockDone         // '}'
	ngxEndFile
)

// ngxLexer splits a file into directives by the rules of nginx's own reader
// (ngx_conf_read_token in src/core/ngx_conf_file.c): words separated by spaces, tabs and
// line ends; ';' ends a directive, '{' opens a block, '}' closes one; '#' at the start of
// a word comments out the rest of the line; a word may be quoted with " or ', and a
// closing quote must be followed by a space, ';', '{' or ')'; a backslash makes the next
// character part of the word; "${" does not open a block.
type ngxLexer struct {
	data []byte
	pos  int
	line int
	path string
}

func (l *ngxLexer) fail(line int, format string, args ...any) error {
	return &Error{File: l.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// next returns the words of the next directive and what ended it.
func (l *ngxLexer) next() ([]ngxWord, int, error) {
	var (
		words                                   []ngxWord
		start, startLine                        int
		lastSpace                               = true
		sharp, quoted, dq, sq, needSpace, isVar bool
	)
	for {
		if l.pos >= len(l.data) {
			if len(words) > 0 || !lastSpace {
				return nil, 0, l.fail(l.line, `unexpected end of file, expecting ";" or "}"`)
			}
			return nil, ngxEndFile, nil
		}
		ch := l.data[l.pos]
		l.pos++
		if ch == '\n' {
			l.line++
			sharp = false
		}
		if sharp {
			continue
		}
		if quoted {
			quoted = false
			continue
		}
		if needSpace {
			switch ch {
			case ' ', '\t', '\r', '\n':
				lastSpace, needSpace = true, false
				continue
			case ';':
				return words, ngxEndDirective, nil
			case '{':
				return words, ngxEndBlockStart, nil
			case ')':
				lastSpace, needSpace = true, false
			default:
				return nil, 0, l.fail(l.line, "unexpected %q after a quoted word", ch)
			}
		}
		if lastSpace {
			start, startLine = l.pos-1, l.line
			switch ch {
			case ' ', '\t', '\r', '\n':
				continue
			case ';', '{':
				if len(words) == 0 {
					return nil, 0, l.fail(l.line, "unexpected %q", ch)
				}
				if ch == '{' {
					return words, ngxEndBlockStart, nil
				}
				return words, ngxEndDirective, nil
			case '}':
				if len(words) != 0 {
					return nil, 0, l.fail(l.line, `unexpected "}" (the directive before it lacks its ";")`)
				}
				return nil, ngxEndBlockDone, nil
			case '#':
				sharp = true
				continue
			case '\\':
				quoted = true
			case '"':
				start++
				dq = true
			case '\'':
				start++
				sq = true
			case '$':
				isVar = true
			}
			lastSpace = false
			continue
		}
		if ch == '{' && isVar {
			continue
		}
		isVar = false
		found := false
		switch {
		case ch == '\\':
			quoted = true
			continue
		case ch == '$':
			isVar = true
			continue
		case dq:
			if ch == '"' {
				dq, needSpace, found = false, true, true
			}
		case sq:
			if ch == '\'' {
				sq, needSpace, found = false, true, true
			}
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == ';' || ch == '{':
			lastSpace, found = true, true
		}
		if !found {
			continue
		}
		words = append(words, ngxWord{text: ngxUnescape(l.data[start : l.pos-1]), line: startLine})
		switch ch {
		case ';':
			return words, ngxEndDirective, nil
		case '{':
			return words, ngxEndBlockStart, nil
		}
	}
}

// ngxUnescape applies the escapes nginx applies to a word: \" \' \\ stand for the
// character, \t \r \n for the control character; any other backslash stays.
func ngxUnescape(raw []byte) string {
	if !strings.Contains(string(raw), `\`) {
		return string(raw)
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			switch raw[i+1] {
			case '"', '\'', '\\':
				i++
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case 'r':
				b.WriteByte('\r')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// ngxMaxIncludeDepth bounds how deeply includes nest, so that a file that includes itself
// is an error rather than a loop.
const ngxMaxIncludeDepth = 16

// ngxReader reads a configuration and the files it includes into one tree.
type ngxReader struct {
	files   Files
	confDir string // relative includes resolve against the main file's folder, as nginx's conf prefix
	total   int    // bytes read, all files together
	col     *collector
}

// display is how findings name the file at path: relative to the main file's folder when
// inside it.
func (r *ngxReader) display(path string) string {
	if rel, err := filepath.Rel(r.confDir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}

// readFile parses one file's directives; depth counts the includes above it.
func (r *ngxReader) readFile(path, name string, data []byte, depth int) ([]*ngxDirective, error) {
	r.total += len(data)
	if r.total > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("the configuration and its includes hold more than %d MiB", MaxFileBytes>>20)}
	}
	l := &ngxLexer{data: data, line: 1, path: path}
	dirs, err := r.readBlock(l, name, false, depth)
	if err != nil {
		return nil, err
	}
	return dirs, nil
}

func (r *ngxReader) readBlock(l *ngxLexer, name string, inBlock bool, depth int) ([]*ngxDirective, error) {
	var out []*ngxDirective
	for {
		words, end, err := l.next()
		if err != nil {
			return nil, err
		}
		switch end {
		case ngxEndFile:
			if inBlock {
				return nil, l.fail(l.line, `unexpected end of file, expecting "}"`)
			}
			return out, nil
		case ngxEndBlockDone:
			if !inBlock {
				return nil, l.fail(l.line, `unexpected "}"`)
			}
			return out, nil
		}
		d := &ngxDirective{name: words[0].text, at: Place{File: name, Line: words[0].line}, path: l.path}
		for _, w := range words[1:] {
			d.args = append(d.args, w.text)
		}
		if end == ngxEndBlockStart {
			d.hasBlock = true
			if d.block, err = r.readBlock(l, name, true, depth); err != nil {
				return nil, err
			}
			out = append(out, d)
			continue
		}
		if d.name != "include" {
			out = append(out, d)
			continue
		}
		inc, err := r.include(d, depth)
		if err != nil {
			return nil, err
		}
		out = append(out, inc...)
	}
}

// include reads the files an include directive names, in the order nginx reads them
// (a pattern's matches sorted). A file that is not there is a warning, not an error: a
// configuration copied away from its server often lacks its mime.types.
func (r *ngxReader) include(d *ngxDirective, depth int) ([]*ngxDirective, error) {
	if len(d.args) != 1 {
		return nil, &Error{File: d.path, Line: d.at.Line, Msg: `invalid number of arguments in "include" directive`}
	}
	if depth >= ngxMaxIncludeDepth {
		return nil, &Error{File: d.path, Line: d.at.Line, Msg: fmt.Sprintf("includes nest more than %d files deep (does a file include itself?)", ngxMaxIncludeDepth)}
	}
	pattern := d.args[0]
	if !filepath.IsAbs(pattern) {
		pattern = filepath.Join(r.confDir, pattern)
	}
	paths := []string{pattern}
	if strings.ContainsAny(d.args[0], "*?[") {
		var err error
		if paths, err = r.files.Glob(pattern); err != nil {
			return nil, &Error{File: d.path, Line: d.at.Line, Msg: fmt.Sprintf("include %s: %v", d.args[0], err)}
		}
	}
	var out []*ngxDirective
	for _, p := range paths {
		data, err := r.files.ReadFile(p)
		if err != nil {
			r.col.warn(d.at, "include %s: %v; its directives are not read", d.args[0], unwrapPath(err))
			continue
		}
		dirs, err := r.readFile(p, r.display(p), data, depth+1)
		if err != nil {
			return nil, err
		}
		out = append(out, dirs...)
	}
	return out, nil
}

// NginxLogFormat is one log_format directive of an nginx configuration.
type NginxLogFormat struct {
	Name string
	// Escape is the directive's escape= parameter ("default", "json", "none"), or "".
	Escape string
	// Format is the directive's strings joined, as nginx joins them, quotes removed.
	Format string
	At     Place
}

// NginxCombined is nginx's predefined log_format, which a configuration may use without
// defining it (ngx_http_log_module.c).
const NginxCombined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`

// NginxLogFormats reads the nginx configuration at path, and the files it includes, as
// rlsim import reads it, and returns its log_format directives in the order nginx reads
// them. A malformed file, or a log_format without a name or a format, is an error naming
// file:line.
func NginxLogFormats(path string, files Files) ([]NginxLogFormat, error) {
	data, err := files.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	r := &ngxReader{files: files, confDir: filepath.Dir(path), col: &collector{}}
	tree, err := r.readFile(path, filepath.Base(path), data, 0)
	if err != nil {
		return nil, err
	}
	var out []NginxLogFormat
	var walk func(dirs []*ngxDirective) error
	walk = func(dirs []*ngxDirective) error {
		for _, d := range dirs {
			if d.hasBlock {
				if err := walk(d.block); err != nil {
					return err
				}
				continue
			}
			if d.name != "log_format" {
				continue
			}
			f := NginxLogFormat{At: d.at}
			args := d.args
			if len(args) > 0 {
				f.Name, args = args[0], args[1:]
			}
			if len(args) > 0 {
				if v, ok := strings.CutPrefix(args[0], "escape="); ok {
					if v != "default" && v != "json" && v != "none" {
						return &Error{File: d.path, Line: d.at.Line, Msg: fmt.Sprintf("log_format %s: escape=%s: want default, json or none", f.Name, v)}
					}
					f.Escape, args = v, args[1:]
				}
			}
			if len(args) == 0 || f.Name == "" {
				return &Error{File: d.path, Line: d.at.Line, Msg: `invalid number of arguments in "log_format" directive: want a name and a format`}
			}
			f.Format = strings.Join(args, "")
			out = append(out, f)
		}
		return nil
	}
	if err := walk(tree); err != nil {
		return nil, err
	}
	return out, nil
}
