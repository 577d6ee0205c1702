package traffic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:       "jsonl",
		Summary:    "one JSON object per line, its names the identities' (or mapped with --field)",
		Example:    `{"time": "2026-01-01T10:00:59.9Z", "ip": "198.51.100.1", "user": "u1", "route": "GET /x", "cost": 2}`,
		Extensions: []string{".jsonl", ".ndjson"},
		Fields:     append(append([]string(nil), FieldNames...), "header:NAME"),
		Mappable:   true,
		New: func(c LogConfig) (LineParser, error) {
			return jsonlParser{c: c, cols: newRecordColumns(c), strict: len(c.Fields) == 0}, nil
		},
	})
}

// jsonlParser reads one JSON object per line. Its names are the identities' own (time,
// ip, user, …: FieldNames), or the columns --field maps them to; a value is a string or a
// number (null is none). time is required: RFC 3339, or Unix seconds as a number.
// Without --field an unknown name makes the line unreadable, so that a misspelt name is
// found; with --field the names it does not map are ignored, as a real log carries many.
type jsonlParser struct {
	c      LogConfig
	cols   recordColumns
	strict bool
}

func (p jsonlParser) Parse(line []byte, l *LogLine) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(line, &obj); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	if obj == nil {
		return fmt.Errorf("not a JSON object: null")
	}
	v := make([]string, p.cols.size())
	var unknown []string
	for name, raw := range obj {
		slots, ok := p.cols.slots[name]
		if !ok {
			if p.strict && !p.cols.known(name) {
				unknown = append(unknown, name)
			}
			continue
		}
		s, err := jsonScalar(raw)
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
		for _, slot := range slots {
			v[slot] = s
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown field %q (known: %s, http_NAME for a header; --field maps others)", clip(unknown[0]), strings.Join(FieldNames, ", "))
	}
	if v[slotTime] == "" {
		return errNoTime
	}
	return fillRecord(p.c, p.cols, v, l)
}

// jsonScalar is a JSON string's text, a number's digits as written, or "" for null.
func jsonScalar(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return "", nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9':
		return string(raw), nil
	}
	return "", fmt.Errorf("want a string or a number, got %s", clip(string(raw)))
}
