package traffic

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"strings"
)

func init() {
	RegisterLogFormat(LogFormat{
		Name:       "csv",
		Summary:    "a header line naming the columns (the identities' names, or mapped with --field), then one row a request",
		Example:    "time,ip,user,route\n2026-01-01T10:00:59.9Z,198.51.100.1,u1,GET /x",
		Extensions: []string{".csv"},
		Fields:     append(append([]string(nil), FieldNames...), "header:NAME"),
		Mappable:   true,
		Header:     true,
		New: func(c LogConfig) (LineParser, error) {
			return &csvParser{c: c, cols: newRecordColumns(c), strict: len(c.Fields) == 0}, nil
		},
	})
}

// csvParser reads CSV: a header line naming the columns, as JSON lines names its fields
// (jsonlParser), then one row per request; a quoted field may not span lines. The time
// column is required. Without --field an unknown column is an error; with it, the columns
// it does not map are ignored.
type csvParser struct {
	c      LogConfig
	cols   recordColumns
	strict bool
	// slots[i] are the slots column i fills (none for an ignored column); set by Header.
	slots [][]int
}

func (p *csvParser) Header(line []byte) error {
	h, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		return fmt.Errorf("CSV header: %v", err)
	}
	seen := map[string]bool{}
	p.slots = make([][]int, len(h))
	for i, col := range h {
		col = strings.TrimSpace(col)
		slots, ok := p.cols.slots[col]
		if !ok && p.strict && !p.cols.known(col) {
			return fmt.Errorf("CSV header: unknown column %q (known: %s, http_NAME for a header; --field maps others)", clip(col), strings.Join(FieldNames, ", "))
		}
		if seen[col] {
			return fmt.Errorf("CSV header: column %q twice", clip(col))
		}
		seen[col] = true
		p.slots[i] = slots
	}
	if t := p.c.column("time"); !seen[t] {
		return fmt.Errorf("CSV header: no %s column", t)
	}
	return nil
}

func (p *csvParser) Parse(line []byte, l *LogLine) error {
	if p.slots == nil {
		return errors.New("CSV: a row before the header")
	}
	row, err := csv.NewReader(bytes.NewReader(line)).Read()
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("CSV: %v", err)
	}
	if len(row) != len(p.slots) {
		return fmt.Errorf("%d fields, the header names %d", len(row), len(p.slots))
	}
	v := make([]string, p.cols.size())
	for i, slots := range p.slots {
		for _, slot := range slots {
			v[slot] = row[i]
		}
	}
	return fillRecord(p.c, p.cols, v, l)
}
