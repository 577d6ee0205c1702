package run

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// Shard is one of N parts of a replay, from 1: the part that holds the keys that hash to
// it. Every shard reads the whole log — its span, its order and its unread lines are the
// same in every shard — and replays the requests of its own keys only, so the shards of
// one log add up to one run over it (MergeReplay).
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.K, s.N) }

// ParseShard reads K/N, 1 ≤ K ≤ N.
func ParseShard(s string) (Shard, error) {
	k, n, ok := strings.Cut(s, "/")
	kk, err1 := strconv.Atoi(k)
	nn, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || nn < 1 || kk < 1 || kk > nn || nn > 1<<16 {
		return Shard{}, fmt.Errorf("%q: want K/N with 1 <= K <= N (2/4)", s)
	}
	return Shard{K: kk, N: nn}, nil
}

// owns says whether the shard holds key k: an FNV-1a hash of the key's address (16
// bytes) or name, modulo N.
func (s Shard) owns(k traffic.Key) bool {
	h := fnv.New64a()
	if k.Addr.IsValid() {
		b := k.Addr.As16()
		h.Write(b[:])
	} else {
		h.Write([]byte{0xff})
		h.Write([]byte(k.Name))
	}
	return int(h.Sum64()%uint64(s.N)) == s.K-1
}

// ShardKey is the key a sharded replay of key, or of layers when there are any, splits
// the log by: the single key, or the layer whose key every other layer's key determines
// (so that all the requests of any key of any layer fall in one shard). Keys of layers
// that do not determine one another cannot be split: that is an error saying so.
func ShardKey(key string, layers []scenario.LimitSpec) (string, error) {
	return shardKey(ReplaySpec{Key: key, Layers: layers})
}

func shardKey(spec ReplaySpec) (string, error) {
	keys := spec.keys()
	for _, candidate := range keys {
		all := true
		for _, k := range keys {
			all = all && determines(k, candidate)
		}
		if all {
			return candidate, nil
		}
	}
	var names []string
	for _, l := range spec.Layers {
		names = append(names, l.Name+" ("+l.Key+")")
	}
	return "", fmt.Errorf("the layers %s key on things none of which determines the others: whichever one the log is split by, the requests of one key of another layer would fall in several shards, and that layer's counts could not be added up. Shard a replay of fewer layers, or replay this one whole",
		strings.Join(names, ", "))
}

// determines says whether key a determines key b: every request with the same a has the
// same b. An address determines its IPv6 prefixes (IPv4 addresses are their own), and a
// prefix determines the shorter ones.
func determines(a, b string) bool {
	if a == b {
		return true
	}
	bits := func(k string) (int, bool) {
		if k == "ip" {
			return 128, true
		}
		n, ok := strings.CutPrefix(k, "ipv6/")
		v, err := strconv.Atoi(n)
		return v, ok && err == nil
	}
	na, okA := bits(a)
	nb, okB := bits(b)
	return okA && okB && b != "ip" && nb <= na
}

// keep is a shard's choice of lines: those whose key (by the shard key, as the server
// would see it) the shard owns; a line that cannot be keyed goes to shard 1, so that every
// unkeyed request is counted once.
func (s Shard) keep(key string) (func(*traffic.Request) bool, error) {
	keyer, err := traffic.ParseKeyer(key)
	if err != nil {
		return nil, err
	}
	network := traffic.NewNetwork(0) // with no proxies, Deliver only copies fields
	return func(r *traffic.Request) bool {
		req := *r
		network.Deliver(&req)
		k, err := keyer.Key(&req)
		if err != nil {
			return s.K == 1
		}
		return s.owns(k)
	}, nil
}

// ReplayPartial is what a shard of a replay measured, raw, for MergeReplay to add up
// with the other shards into the report of one run. The file a shard writes is this, as
// JSON.
type ReplayPartial struct {
	// Version marks the file as a replay's partial results ("rlsim_replay_partial": 1).
	Version int   `json:"rlsim_replay_partial"`
	Shard   Shard `json:"shard"`
	// Command is the command line that replays the log whole, for the merged report.
	Command string `json:"command,omitempty"`
	// Epoch is the run's t=0.
	Epoch time.Time `json:"epoch"`
	// Report is the shard's report without results: what every shard has the same
	// (scenario, seed, policy, key, the log's lines and span), and its own lines used.
	Report *report.Report `json:"report"`
	// Algorithms are each limiter's parts, in the report's order.
	Algorithms []AlgorithmPartial `json:"algorithms"`
}

// AlgorithmPartial is one limiter's part of a shard: its collector (the outcome's, with
// layers, and each layer's cells), what its limiters hold, the harm and the unkeyed.
type AlgorithmPartial struct {
	Algorithm string                  `json:"algorithm"`
	Totals    report.LimiterTotals    `json:"totals"`
	Collector report.CollectorPartial `json:"collector"`
	// Cells are a layered run's cells, per layer, with their limiters' totals.
	Cells  [][]CellPartial     `json:"cells,omitempty"`
	Layers []report.LayerCount `json:"layers,omitempty"`
	Harm   report.HarmPartial  `json:"harm"`
	// WorstOverAdmission is the worst case of the algorithm under the policy, the same
	// in every shard (the command sets it).
	WorstOverAdmission *float64 `json:"worst_over_admission"`
	Unkeyed            int64    `json:"unkeyed,omitempty"`
	UnkeyedLine        int      `json:"unkeyed_line,omitempty"`
	UnkeyedReason      string   `json:"unkeyed_reason,omitempty"`
}

// CellPartial is one cell of a layer: its collector and its limiter's totals.
type CellPartial struct {
	Totals    report.LimiterTotals    `json:"totals"`
	Collector report.CollectorPartial `json:"collector"`
}

// ReadPartial decodes a shard's partial results. Unknown fields are an error, so that a
// file of something else is not taken for one.
func ReadPartial(r io.Reader) (*ReplayPartial, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var p ReplayPartial
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a replay shard's results: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a replay shard's results: more than one JSON value")
	}
	if p.Version != 1 || p.Report == nil || p.Report.Log == nil {
		return nil, errors.New("not a replay shard's results (rlsim replay --shard K/N writes them)")
	}
	return &p, nil
}

// IsPartial says whether data, the start of a results file, is a replay shard's.
func IsPartial(data []byte) bool {
	return strings.Contains(string(data[:min(len(data), 64)]), `"rlsim_replay_partial"`)
}

// MergeReplay adds up the partial results of the shards 1/N … N/N of one replay, named
// by names in errors, into the report one run over the whole log gives, and returns it
// with the run's epoch and the command that replays the log whole. Every shard must be
// there exactly once, from the same log and the same command line.
func MergeReplay(parts []*ReplayPartial, names []string) (*report.Report, time.Time, string, error) {
	if len(parts) == 0 {
		return nil, time.Time{}, "", errors.New("no shards to merge")
	}
	first := parts[0]
	n := first.Shard.N
	byK := make([]string, n+1)
	header := func(p *ReplayPartial) report.Report {
		h := *p.Report
		l := *h.Log
		l.Used, l.OtherShards, l.WholeSeconds, l.Shard, l.PlacementEffect = 0, 0, 0, "", ""
		h.Log, h.Description, h.Results = &l, "", nil
		return h
	}
	want := header(first)
	for i, p := range parts {
		switch {
		case p.Shard.N != n:
			return nil, time.Time{}, "", fmt.Errorf("%s: is shard %s, but %s is one of %d", names[i], p.Shard, names[0], n)
		case byK[p.Shard.K] != "":
			return nil, time.Time{}, "", fmt.Errorf("%s: shard %s is also in %s", names[i], p.Shard, byK[p.Shard.K])
		case !reflect.DeepEqual(header(p), want) || !p.Epoch.Equal(first.Epoch) || p.Command != first.Command:
			return nil, time.Time{}, "", fmt.Errorf("%s: is a shard of another replay than %s (the log, its reading or the command line differ)", names[i], names[0])
		case len(p.Algorithms) != len(first.Algorithms):
			return nil, time.Time{}, "", fmt.Errorf("%s: ran %d algorithms, %s %d", names[i], len(p.Algorithms), names[0], len(first.Algorithms))
		}
		byK[p.Shard.K] = names[i]
	}
	for k := 1; k <= n; k++ {
		if byK[k] == "" {
			return nil, time.Time{}, "", fmt.Errorf("shard %d/%d is missing", k, n)
		}
	}
	rep := want
	rep.Results = []report.Result{}
	log := *rep.Log
	for _, p := range parts {
		log.Used += p.Report.Log.Used
		log.WholeSeconds += p.Report.Log.WholeSeconds
	}
	if log.WholeSeconds == 0 {
		log.PlacementEffect = ""
	} else {
		log.PlacementEffect = traffic.PlacementDocs[log.Placement]
	}
	rep.Log = &log
	rep.Description = fmt.Sprintf("replay of %s: %d requests", log.File, log.Used)
	for a := range first.Algorithms {
		var algs []AlgorithmPartial
		for _, p := range parts {
			if p.Algorithms[a].Algorithm != first.Algorithms[a].Algorithm {
				return nil, time.Time{}, "", fmt.Errorf("the shards ran different algorithms (%s and %s)", first.Algorithms[a].Algorithm, p.Algorithms[a].Algorithm)
			}
			algs = append(algs, p.Algorithms[a])
		}
		res, err := mergeAlgorithm(algs)
		if err != nil {
			return nil, time.Time{}, "", err
		}
		rep.Results = append(rep.Results, res)
	}
	return &rep, first.Epoch, first.Command, nil
}

// mergeAlgorithm adds up one limiter's parts, as the run over all keys finishes its
// result (runPass, engine.result).
func mergeAlgorithm(parts []AlgorithmPartial) (report.Result, error) {
	name := parts[0].Algorithm
	collectors := make([]report.CollectorPartial, len(parts))
	totals := report.LimiterTotals{}
	for i, p := range parts {
		collectors[i] = p.Collector
		totals = totals.Add(p.Totals)
	}
	var res report.Result
	var err error
	if parts[0].Cells == nil {
		if res, err = report.MergeCollectors(name, totals, collectors); err != nil {
			return res, err
		}
	} else if res, err = mergeLayered(name, parts, collectors); err != nil {
		return res, err
	}
	firstLine := 0
	for _, p := range parts {
		if p.Unkeyed == 0 {
			continue
		}
		if firstLine == 0 || p.UnkeyedLine < firstLine {
			firstLine, res.UnkeyedReason = p.UnkeyedLine, p.UnkeyedReason
		}
		res.Unkeyed += p.Unkeyed
	}
	h := report.NewHarm(time.Duration(parts[0].Collector.Window))
	harms := make([]report.HarmPartial, len(parts))
	for i, p := range parts {
		harms[i] = p.Harm
	}
	if err := report.MergeHarm(h, harms); err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	h.Fill(&res)
	res.WorstOverAdmission = parts[0].WorstOverAdmission
	return res, nil
}

// mergeLayered adds up a layered run's parts as report.Layered.Result combines one run's
// layers: the outcome's counts, every cell's own verdicts, the layer that overshot most.
func mergeLayered(name string, parts []AlgorithmPartial, outcomes []report.CollectorPartial) (report.Result, error) {
	var cells [][]report.Result
	sum := report.LimiterTotals{}
	for l := range parts[0].Cells {
		var row []report.Result
		for c := range parts[0].Cells[l] {
			var cps []report.CollectorPartial
			tot := report.LimiterTotals{}
			for _, p := range parts {
				if len(p.Cells) != len(parts[0].Cells) || len(p.Cells[l]) != len(parts[0].Cells[l]) {
					return report.Result{}, fmt.Errorf("%s: the shards ran different layers", name)
				}
				cps = append(cps, p.Cells[l][c].Collector)
				tot = tot.Add(p.Cells[l][c].Totals)
			}
			r, err := report.MergeCollectors(name, tot, cps)
			if err != nil {
				return report.Result{}, err
			}
			row = append(row, r)
			sum = sum.Add(tot)
		}
		cells = append(cells, row)
	}
	r, err := report.MergeCollectors(name, sum, outcomes)
	if err != nil {
		return r, err
	}
	r.Timeline = cells[0][0].Timeline
	r.PeakWindowAdmitted, r.OverAdmission = 0, 0
	r.FalseAllow, r.FalseReject = 0, 0
	for _, row := range cells {
		for _, cr := range row {
			if cr.OverAdmission > r.OverAdmission {
				r.PeakWindowAdmitted, r.OverAdmission = cr.PeakWindowAdmitted, cr.OverAdmission
			}
			r.FalseAllow += cr.FalseAllow
			r.FalseReject += cr.FalseReject
		}
	}
	r.FalseAllowRate = report.Ratio(r.FalseAllow, r.Requests)
	r.FalseRejectRate = report.Ratio(r.FalseReject, r.Requests)
	layers := append([]report.LayerCount(nil), parts[0].Layers...)
	for _, p := range parts[1:] {
		for i, lc := range p.Layers {
			layers[i].Checked += lc.Checked
			layers[i].Refused += lc.Refused
			layers[i].AttackerPassed += lc.AttackerPassed
		}
	}
	r.RefusalsByLayer = layers
	return r, nil
}
