package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/algorithms"
)

// MemoryAlgorithms are the algorithms rlsim memory sizes in Redis. The leaky bucket has no
// script of its own; as a meter it keeps a level and a time, the token bucket's hash.
var MemoryAlgorithms = []string{"fixed-window", "sliding-log", "sliding-window", "token-bucket", "leaky-bucket", "gcra"}

// ZsetListpackEntries is Redis 7's default zset-max-listpack-entries: a sorted set with more
// members leaves the compact listpack for a skiplist plus hash table.
const ZsetListpackEntries = 128

// ModelBytes returns the bytes one client's keys take in Redis 7 for algorithm at limit
// (the client at its limit), and the encoding of its (current) key, from a model
// calibrated with MEMORY USAGE on a real server.
//
// Calibration (measured with `rlsim memory --redis`, 2000 clients per algorithm, limit
// 100 per minute): redis-server 7.0.15 (Debian 12 package, jemalloc 5.3.0, 64-bit),
// default configuration, key names "rlsim-memory:<tag>:user_0000001" (28–30 bytes) plus
// ":<window index>" for the window algorithms (37 bytes), each with the TTL its script
// sets. MEMORY USAGE per client, and the growth of INFO used_memory per client:
//
//	fixed-window    string, int encoding            88 B   (used_memory +147 B)
//	sliding-window  two such strings                176 B  (+240 B)
//	token-bucket    hash {t, s}, listpack           104 B  (+144 B)
//	leaky-bucket    the same hash                   104 B  (+129 B)
//	gcra            string, int encoding (tat)      72 B   (+112 B)
//	sliding-log     zset of n "<µs>:<i>" members:
//	                  listpack  n=1 120, 2 152, 16 584, 32 1096, 64 2120, 100 3656,
//	                            120 4168, 128 4168
//	                  skiplist  n=129 16967, 200 24729, 256 30856, 500 59598, 1000 118336
//
// At n=100 the sorted set takes 3656 B, 20.8 times the two counters' 176 B. Past 128
// members (zset-max-listpack-entries) the set becomes a skiplist plus hash table and its
// cost jumps 4.1 times at once (4168 B at 128, 16967 B at 129), about 118 B per member
// from then on. MEMORY USAGE rounds allocations up to jemalloc's size classes, so the
// listpack grows in steps (120 and 128 share one class); the model interpolates linearly
// between the measured points of each encoding and extends the last segment beyond them.
// Other key name lengths move each key by about the difference, rounded to 8 bytes.
func ModelBytes(algorithm string, limit int64) (bytes int64, encoding string, err error) {
	switch algorithm {
	case "fixed-window":
		return 88, "int", nil
	case "sliding-window":
		return 176, "int", nil
	case "token-bucket", "leaky-bucket":
		return 104, "listpack", nil
	case "gcra":
		return 72, "int", nil
	case "sliding-log":
		if limit <= ZsetListpackEntries {
			return interpolate(listpackPoints, limit), "listpack", nil
		}
		return interpolate(skiplistPoints, limit), "skiplist", nil
	}
	return 0, "", fmt.Errorf("unknown algorithm %q (want one of %s)", algorithm, strings.Join(MemoryAlgorithms, ", "))
}

// The measured (members, bytes) points of the sorted-set calibration, ascending.
var (
	listpackPoints = [][2]int64{{1, 120}, {2, 152}, {16, 584}, {32, 1096}, {64, 2120}, {100, 3656}, {120, 4168}, {128, 4168}}
	skiplistPoints = [][2]int64{{129, 16967}, {200, 24729}, {256, 30856}, {500, 59598}, {1000, 118336}}
)

// interpolate is linear between the points around n and extends the last segment beyond.
func interpolate(pts [][2]int64, n int64) int64 {
	if n <= pts[0][0] {
		return pts[0][1]
	}
	for i := 1; i < len(pts); i++ {
		if n <= pts[i][0] || i == len(pts)-1 {
			a, b := pts[i-1], pts[i]
			return a[1] + (b[1]-a[1])*(n-a[0])/(b[0]-a[0])
		}
	}
	return pts[len(pts)-1][1]
}

// Measurement is what LoadAndMeasure found on a real server for one algorithm.
type Measurement struct {
	Algorithm string
	// BytesPerKey is the mean MEMORY USAGE of one client's keys (summed over its keys).
	BytesPerKey float64
	// UsedMemoryPerKey is the growth of INFO used_memory per client while loading: it
	// includes what MEMORY USAGE leaves out (the expires table, allocator slack).
	UsedMemoryPerKey float64
	// Encoding is OBJECT ENCODING of the client's (first) key.
	Encoding string
	// Clients is how many clients were loaded: as asked, or fewer to stay within
	// LoadBudget.
	Clients int
}

// LoadBudget bounds the bytes LoadAndMeasure writes for one algorithm: it loads fewer
// clients than asked when they would take more (the first client's MEMORY USAGE tells).
const LoadBudget = 1 << 30

// ClientName is the client id rlsim memory loads as client i: fixed width, so every key
// name of an algorithm has the same length.
func ClientName(i int) string { return fmt.Sprintf("user_%07d", i) }

// LoadAndMeasure writes clients keys for algorithm under prefix on r, shaped exactly as
// the scripts write them — it runs the algorithm's script for the first client until the
// client is at its limit, then copies that key with DUMP/RESTORE (which keeps the
// encoding) to the others — reads MEMORY USAGE of every key and deletes every key it
// wrote, and only those, before returning, even on error.
func LoadAndMeasure(r *Redis, algorithm string, p algorithms.Policy, clients int, prefix string) (m Measurement, err error) {
	m = Measurement{Algorithm: algorithm, Clients: clients}
	var written []string
	defer func() {
		if derr := r.Delete(written...); derr != nil && err == nil {
			err = fmt.Errorf("deleting the keys rlsim wrote: %w", derr)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*Timeout)
	defer cancel()
	c := r.client
	before, err := usedMemory(ctx, c)
	if err != nil {
		return m, r.wrap(err)
	}

	// The first client through the script itself. The leaky bucket borrows the token
	// bucket's script: same hash, same fields.
	scriptAlg := algorithm
	if algorithm == "leaky-bucket" {
		scriptAlg = "token-bucket"
	}
	lim, err := NewLimiter(r, scriptAlg, p, prefix)
	if err != nil {
		return m, err
	}
	now := time.Date(2026, 1, 1, 10, 0, 30, 0, time.UTC).UnixNano()
	first := ClientName(0)
	templates := lim.Keys(first, now)
	for _, k := range templates {
		if n, err := c.Exists(ctx, k).Result(); err != nil {
			return m, r.wrap(err)
		} else if n > 0 {
			return m, fmt.Errorf("key %s already exists; refusing to touch it", k)
		}
	}
	// Both counters of the two-counter window hold counts: the previous window's first.
	if algorithm == "sliding-window" {
		if _, err := lim.Allow(first, Now(now-int64(p.Window)), 1); err != nil {
			return m, err
		}
	}
	written = append(written, templates...)
	for i := int64(0); i < p.Limit; i++ {
		if _, err := lim.Allow(first, Now(now+i), 1); err != nil {
			return m, err
		}
	}
	dumps := make([]string, len(templates))
	for i, k := range templates {
		if dumps[i], err = c.Dump(ctx, k).Result(); err != nil {
			return m, r.wrap(fmt.Errorf("DUMP %s: %w", k, err))
		}
	}
	m.Encoding, _ = c.ObjectEncoding(ctx, templates[len(templates)-1]).Result()
	var perClient int64
	for _, k := range templates {
		n, err := c.MemoryUsage(ctx, k, 0).Result()
		if err != nil {
			return m, r.wrap(fmt.Errorf("MEMORY USAGE %s: %w", k, err))
		}
		perClient += n
	}
	// Never load more than LoadBudget on someone's server: a long sliding log times many
	// clients would otherwise run it out of memory.
	clients = int(min(int64(clients), max(1, LoadBudget/max(perClient, 1))))
	m.Clients = clients

	// The other clients: RESTORE, pipelined, with the TTL of a window.
	ttl := 2 * p.Window
	// Pipelines of about 8 MiB at most, so each stays well inside the write timeout.
	batch := int(max(1, min(1000, (8<<20)/max(perClient, 1))))
	for start := 1; start < clients; start += batch {
		pipe := c.Pipeline()
		for i := start; i < min(start+batch, clients); i++ {
			for j, k := range lim.Keys(ClientName(i), now) {
				pipe.Restore(ctx, k, ttl, dumps[j])
				written = append(written, k)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return m, r.wrap(fmt.Errorf("loading keys: %w", err))
		}
	}
	after, err := usedMemory(ctx, c)
	if err != nil {
		return m, r.wrap(err)
	}
	m.UsedMemoryPerKey = float64(after-before) / float64(clients)

	var total int64
	for start := 0; start < len(written); start += batch {
		pipe := c.Pipeline()
		cmds := make([]*redis.IntCmd, 0, batch)
		for _, k := range written[start:min(start+batch, len(written))] {
			cmds = append(cmds, pipe.MemoryUsage(ctx, k, 0))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return m, r.wrap(fmt.Errorf("MEMORY USAGE: %w", err))
		}
		for _, cmd := range cmds {
			total += cmd.Val()
		}
	}
	m.BytesPerKey = float64(total) / float64(clients)
	return m, nil
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO memory has no used_memory")
}

// CheckEmpty refuses a database that holds keys, or, with a prefix the user chose, keys
// under that prefix: rlsim memory must never meet keys it did not write.
func CheckEmpty(r *Redis, prefix string, userPrefix bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if !userPrefix {
		n, err := r.client.DBSize(ctx).Result()
		if err != nil {
			return r.wrap(err)
		}
		if n > 0 {
			return fmt.Errorf("the database holds %d keys; rlsim memory writes and deletes keys, so it runs only on an empty database, or give --prefix to confine it to keys under that prefix", n)
		}
		return nil
	}
	iter := r.client.Scan(ctx, 0, escapeGlob(prefix)+"*", 1000).Iterator()
	if iter.Next(ctx) {
		return fmt.Errorf("keys under --prefix %q already exist (%s, ...); choose a prefix no one uses", prefix, iter.Val())
	}
	return r.wrap(iter.Err())
}
