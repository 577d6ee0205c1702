package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// SizeOptions say what rlsim memory sizes.
type SizeOptions struct {
	// Keys is the number of active client keys the totals are for.
	Keys int
	// Policy is the limit each client is held to; every client is sized at its limit.
	Policy algorithms.Policy
	// Algorithms to size, in order (default MemoryAlgorithms).
	Algorithms []string
	// Redis, when not nil, is measured: Load clients per algorithm (at most Keys) are
	// loaded under Prefix, measured and deleted, and the totals scale their mean to Keys.
	// When nil, ModelBytes answers.
	Redis  *Redis
	Prefix string
	Load   int
	// EncodingLimits are the sliding-log limits of the sorted-set encoding table.
	EncodingLimits []int64
	// MeasureHooks stop, pause and count the measurements on Redis.
	MeasureHooks
}

// MemoryRow is one algorithm's memory per client key.
type MemoryRow struct {
	Algorithm        string  `json:"algorithm"`
	StateBytesPerKey float64 `json:"state_bytes_per_key"`
	RedisBytesPerKey float64 `json:"redis_bytes_per_key"`
	// RedisSource is "measured" (MEMORY USAGE on the server) or "model".
	RedisSource string `json:"redis_source"`
	// RedisUsedMemoryPerKey is the growth of INFO used_memory per key: what MEMORY USAGE
	// counts plus what it leaves out (the expires table, the hash tables' slots,
	// allocator slack). Measured, or the model's (ModelUsedMemory).
	RedisUsedMemoryPerKey float64 `json:"redis_used_memory_per_key"`
	// RedisUsedMemoryDisturbed says the server's used_memory did not grow while this
	// algorithm's keys were loaded (another client freed memory meanwhile), so
	// RedisUsedMemoryPerKey is 0: not measured.
	RedisUsedMemoryDisturbed bool   `json:"redis_used_memory_disturbed,omitempty"`
	RedisEncoding            string `json:"redis_encoding"`
	// RedisClientsLoaded is how many clients were loaded to measure (0 for the model).
	RedisClientsLoaded int   `json:"redis_clients_loaded"`
	StateBytesTotal    int64 `json:"state_bytes_total"`
	RedisBytesTotal    int64 `json:"redis_bytes_total"`
	// VsTwoCounters is RedisBytesPerKey over the two-counter window's (0 when that was
	// not sized).
	VsTwoCounters float64 `json:"redis_vs_two_counters,omitempty"`
}

// EncodingRow is the sliding log's sorted set at one limit.
type EncodingRow struct {
	Limit            int64   `json:"limit"`
	Encoding         string  `json:"encoding"`
	RedisBytesPerKey float64 `json:"redis_bytes_per_key"`
	BytesPerEntry    float64 `json:"bytes_per_entry"`
}

// MemoryReport is the result of rlsim memory.
type MemoryReport struct {
	Keys   int    `json:"keys"`
	Limit  int64  `json:"limit"`
	Window string `json:"window"`
	// Redis is "model (calibrated on Redis 7.0.15)" or the measured server's version.
	Redis string `json:"redis"`
	// Loaded is how many clients per algorithm were loaded on the server (0 for the model).
	Loaded  int         `json:"loaded"`
	Results []MemoryRow `json:"results"`
	// SlidingLogVsTwoCounters is the measured (or modelled) ratio of the sliding log's
	// Redis bytes per key to the two-counter window's, by MEMORY USAGE;
	// SlidingLogVsTwoCountersUsedMemory the same by the growth of used_memory. 0 when
	// either algorithm was not sized (or, for used_memory, its growth was disturbed).
	SlidingLogVsTwoCounters           float64       `json:"sliding_log_vs_two_counters"`
	SlidingLogVsTwoCountersUsedMemory float64       `json:"sliding_log_vs_two_counters_used_memory"`
	ZsetEncoding                      []EncodingRow `json:"zset_encoding"`
}

// encodingSample is how many clients are loaded per limit of the encoding table.
const encodingSample = 200

// Size measures or models every algorithm's memory per key.
func Size(o SizeOptions) (*MemoryReport, error) {
	if o.Keys <= 0 {
		return nil, fmt.Errorf("keys must be positive, got %d", o.Keys)
	}
	if err := CheckPolicy(o.Policy); err != nil {
		return nil, err
	}
	algs := o.Algorithms
	if len(algs) == 0 {
		algs = MemoryAlgorithms()
	}
	var baseline int64 // used_memory before anything was loaded
	rep := &MemoryReport{Keys: o.Keys, Limit: o.Policy.Limit, Window: o.Policy.Window.String(), Redis: "model (calibrated on Redis 7.0.15)"}
	if o.Redis != nil {
		v, err := serverVersion(o.Redis)
		if err != nil {
			return nil, err
		}
		rep.Redis = "measured on Redis " + v
		rep.Loaded = o.Keys
		if o.Load > 0 {
			rep.Loaded = min(o.Load, o.Keys)
		}
		if err := CheckEmpty(o.Redis, o.Prefix, true); err != nil {
			return nil, err
		}
		if baseline, err = o.Redis.usedMemory(); err != nil {
			return nil, err
		}
	}
	for _, a := range algs {
		row := MemoryRow{Algorithm: a}
		state, err := inProcessBytesPerKey(a, o.Policy)
		if err != nil {
			return nil, err
		}
		row.StateBytesPerKey = state
		if o.Redis != nil {
			if err := o.settle(baseline); err != nil {
				return nil, err
			}
			m, err := LoadAndMeasure(o.Redis, a, o.Policy, rep.Loaded, o.Prefix, o.MeasureHooks)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", a, err)
			}
			row.RedisBytesPerKey, row.RedisUsedMemoryPerKey, row.RedisEncoding = m.BytesPerKey, m.UsedMemoryPerKey, m.Encoding
			row.RedisUsedMemoryDisturbed = m.UsedMemoryDisturbed
			row.RedisClientsLoaded = m.Clients
			row.RedisSource = "measured"
		} else {
			b, enc, err := ModelBytes(a, o.Policy.Limit)
			if err != nil {
				return nil, err
			}
			used, _ := ModelUsedMemory(a, o.Policy.Limit)
			row.RedisBytesPerKey, row.RedisUsedMemoryPerKey, row.RedisEncoding, row.RedisSource = float64(b), float64(used), enc, "model"
		}
		row.StateBytesTotal = int64(row.StateBytesPerKey * float64(o.Keys))
		row.RedisBytesTotal = int64(row.RedisBytesPerKey * float64(o.Keys))
		rep.Results = append(rep.Results, row)
	}
	var two, log MemoryRow
	for _, r := range rep.Results {
		switch algorithms.FormOf(r.Algorithm) {
		case algorithms.FormTwoWindowCounts:
			two = r
		case algorithms.FormTimestamps:
			log = r
		}
	}
	if two.RedisBytesPerKey > 0 {
		for i := range rep.Results {
			rep.Results[i].VsTwoCounters = rep.Results[i].RedisBytesPerKey / two.RedisBytesPerKey
		}
		rep.SlidingLogVsTwoCounters = log.RedisBytesPerKey / two.RedisBytesPerKey
	}
	if two.RedisUsedMemoryPerKey > 0 && log.RedisUsedMemoryPerKey > 0 {
		rep.SlidingLogVsTwoCountersUsedMemory = log.RedisUsedMemoryPerKey / two.RedisUsedMemoryPerKey
	}
	// The encoding table follows the sorted set of the timestamp log.
	setAlg := ""
	if logs := algorithms.Select(func(k *algorithms.Kind) bool { return k.Form == algorithms.FormTimestamps && k.Script != "" }); len(logs) > 0 {
		setAlg = logs[0]
	}
	for _, limit := range o.EncodingLimits {
		p := o.Policy
		p.Limit = limit
		if err := CheckPolicy(p); err != nil {
			return nil, fmt.Errorf("%s at limit %d: %w", setAlg, limit, err)
		}
		row := EncodingRow{Limit: limit}
		if o.Redis != nil {
			if err := o.settle(baseline); err != nil {
				return nil, err
			}
			m, err := LoadAndMeasure(o.Redis, setAlg, p, encodingSample, o.Prefix, o.MeasureHooks)
			if err != nil {
				return nil, fmt.Errorf("%s at limit %d: %w", setAlg, limit, err)
			}
			row.RedisBytesPerKey, row.Encoding = m.BytesPerKey, m.Encoding
		} else {
			b, enc, _ := ModelBytes(setAlg, limit)
			row.RedisBytesPerKey, row.Encoding = float64(b), enc
		}
		row.BytesPerEntry = row.RedisBytesPerKey / float64(limit)
		rep.ZsetEncoding = append(rep.ZsetEncoding, row)
	}
	return rep, nil
}

// settle waits, with Pause, until the server's used_memory is back within settleSlack
// of baseline, its level before the first measurement, or settleMax has passed: Redis
// shrinks a hash table a deletion emptied on a later cron tick, and a measurement begun
// before that would not count the tables' growth that the first one counted. It also
// stops when the context has ended.
func (o SizeOptions) settle(baseline int64) error {
	return settle(o.MeasureHooks, o.Redis.usedMemory, baseline)
}

func settle(h MeasureHooks, usedMemory func() (int64, error), baseline int64) error {
	if err := h.err(); err != nil {
		return err
	}
	if h.Pause == nil {
		return nil
	}
	for waited := time.Duration(0); waited < settleMax; waited += settleStep {
		used, err := usedMemory()
		if err != nil || used <= baseline+settleSlack {
			return err
		}
		h.Pause(settleStep)
		if err := h.err(); err != nil {
			return err
		}
	}
	return nil
}

// How settle waits: in steps of settleStep, up to settleMax, for used_memory to come back
// within settleSlack of where it started (a server others use moves on its own).
const (
	settleStep  = 50 * time.Millisecond
	settleMax   = 2 * time.Second
	settleSlack = 128 << 10
)

// inProcessBytesPerKey runs the in-process limiter with a sample of clients each brought
// to its limit and returns its own count of state bytes per key.
func inProcessBytesPerKey(name string, p algorithms.Policy) (float64, error) {
	lim, err := algorithms.New(name, p)
	if err != nil {
		return 0, err
	}
	const sample = 64
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC).UnixNano()
	step := max(int64(p.Window)/(2*p.Limit), 1)
	for i := int64(0); i < p.Limit; i++ { // time never goes back, across keys too
		for k := uint32(0); k < sample; k++ {
			lim.Allow(k, now+i*step, 1)
		}
	}
	return float64(lim.StateBytes()) / float64(lim.Keys()), nil
}

func serverVersion(r *Redis) (string, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	info, err := r.client.Info(ctx, "server").Result()
	if err != nil {
		return "", r.wrap(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "?", nil
}
