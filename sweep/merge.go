package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
)

// ReadResults decodes a results file written by a sweep (whole or one shard). Unknown
// fields are an error, so a file from something else is not mistaken for a shard.
func ReadResults(r io.Reader) (*Results, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var res Results
	if err := dec.Decode(&res); err != nil {
		return nil, fmt.Errorf("not a sweep results file: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not a sweep results file: more than one JSON value")
	}
	if res.Sweep.Points != Size(res.Sweep.Params) || res.Sweep.Points == 0 {
		return nil, fmt.Errorf("not a sweep results file: %d points for a grid of %d", res.Sweep.Points, Size(res.Sweep.Params))
	}
	return &res, nil
}

// Merge combines the shards 1/N … N/N of one sweep, named by names in errors, into the
// results a single unsharded run gives: the same rows, in grid order, with no shard.
// Every shard must be there exactly once, from the same sweep.
func Merge(parts []*Results, names []string) (*Results, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("no results to merge")
	}
	first := parts[0]
	if first.Shard == nil {
		if len(parts) == 1 {
			return first, nil
		}
		return nil, fmt.Errorf("%s: is a whole sweep, not a shard", names[0])
	}
	n := first.Shard.N
	byK := make([]string, n+1)
	merged := &Results{Sweep: first.Sweep}
	for i, p := range parts {
		switch {
		case p.Shard == nil:
			return nil, fmt.Errorf("%s: is a whole sweep, not a shard", names[i])
		case !reflect.DeepEqual(p.Sweep, first.Sweep):
			return nil, fmt.Errorf("%s: is a shard of a different sweep than %s (scenario file, seed, algorithms or parameters differ)", names[i], names[0])
		case p.Shard.N != n:
			return nil, fmt.Errorf("%s: is shard %d/%d, but %s is one of %d", names[i], p.Shard.K, p.Shard.N, names[0], n)
		case p.Shard.K < 1 || p.Shard.K > n:
			return nil, fmt.Errorf("%s: shard %d/%d is out of range", names[i], p.Shard.K, p.Shard.N)
		case byK[p.Shard.K] != "":
			return nil, fmt.Errorf("%s: shard %d/%d is also in %s", names[i], p.Shard.K, n, byK[p.Shard.K])
		}
		byK[p.Shard.K] = names[i]
		for _, row := range p.Rows {
			if row.Point < 0 || row.Point >= first.Sweep.Points || !p.Shard.Owns(row.Point) {
				return nil, fmt.Errorf("%s: holds point %d, which is not in shard %d/%d", names[i], row.Point, p.Shard.K, n)
			}
		}
		merged.Rows = append(merged.Rows, p.Rows...)
	}
	for k := 1; k <= n; k++ {
		if byK[k] == "" {
			return nil, fmt.Errorf("shard %d/%d is missing", k, n)
		}
	}
	slices.SortFunc(merged.Rows, func(a, b Row) int { return a.Point - b.Point })
	for i, row := range merged.Rows {
		if row.Point != i {
			return nil, fmt.Errorf("point %d is missing or repeated in the shards", i)
		}
	}
	return merged, nil
}
