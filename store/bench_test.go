package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// benchmarkFace runs the two-counter script for 100 clients on one face, one decision per
// iteration, 1 ms of virtual time apart.
func benchmarkFace(b *testing.B, st Store, prefix string) {
	lim, err := NewLimiter(st, "sliding-window", algorithms.Policy{Limit: 100, Window: time.Minute}, prefix)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	clients := make([]string, 100)
	for i := range clients {
		clients[i] = ClientName(i)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := lim.Allow(clients[i%len(clients)], Now(now+int64(i)*int64(time.Millisecond)), 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScript compares the faces in one run: go test -bench Script ./store
func BenchmarkScript(b *testing.B) {
	b.Run("model", func(b *testing.B) { benchmarkFace(b, NewModel(), "rl:") })
	b.Run("miniredis", func(b *testing.B) {
		r, err := NewMiniredis()
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		benchmarkFace(b, r, "rl:")
	})
	b.Run("redis", func(b *testing.B) {
		url := os.Getenv("RLSIM_REDIS_URL")
		if url == "" {
			b.Skip("RLSIM_REDIS_URL not set")
		}
		r, err := NewRedis(url)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		prefix := "rlsim-bench:" + time.Now().Format("150405.000000") + ":"
		benchmarkFace(b, r, prefix)
		keys, _ := r.Keys(prefix)
		names := make([]string, len(keys))
		for i, k := range keys {
			names[i] = k.Name
		}
		r.Delete(names...)
	})
}

// benchmarkPipelined runs the two-counter script like benchmarkFace, batch calls per
// pipeline (1: one call per round trip, through Allow), step of virtual time apart, and
// reports decisions per second. With away > 0 the batches go through a Stream as a
// pipelined run sends them: each batch is made while away batches before it are on their
// way, and the oldest one's replies are waited for once the next has left; with 0,
// EvalBatch sends a batch and waits for its replies before the next is made.
func benchmarkPipelined(b *testing.B, st Store, prefix string, batch int, step time.Duration, away int) {
	benchmarkPipelinedKeys(b, st, prefix, batch, step, away, 0)
}

// benchmarkPipelinedKeys is benchmarkPipelined over keys clients, each call's client drawn
// at random, as redis-benchmark -r keys draws its keys; keys 0 is 100 clients in turn.
func benchmarkPipelinedKeys(b *testing.B, st Store, prefix string, batch int, step time.Duration, away int, keys int) {
	lim, err := NewLimiter(st, "sliding-window", algorithms.Policy{Limit: 100, Window: time.Minute}, prefix)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	clients := make([]string, max(keys, 100))
	for i := range clients {
		clients[i] = ClientName(i)
	}
	pick := func(i int) string { return clients[i%len(clients)] }
	if keys > 0 {
		rng := rand.New(rand.NewPCG(1, 2))
		pick = func(int) string { return clients[rng.IntN(len(clients))] }
	}
	stream := NewStream(st)
	// out is the batches on their way, oldest first, and their calls; spare the buffers
	// of calls whose replies are back.
	var out []*Pending
	var outCalls, spare [][]Call
	wait := func() {
		if _, err := out[0].Wait(); err != nil {
			b.Fatal(err)
		}
		spare = append(spare, outCalls[0][:0])
		out, outCalls = out[1:], outCalls[1:]
	}
	calls := make([]Call, 0, batch)
	send := func() {
		if away == 0 {
			if _, err := EvalBatch(st, calls); err != nil {
				b.Fatal(err)
			}
			calls = calls[:0]
			return
		}
		out, outCalls = append(out, stream.Send(calls)), append(outCalls, calls)
		if len(out) > away {
			wait()
		}
		if n := len(spare); n > 0 {
			calls, spare = spare[n-1], spare[:n-1]
		} else {
			calls = make([]Call, 0, batch)
		}
	}
	i := 0
	for b.Loop() {
		at := now + int64(i)*int64(step)
		c := pick(i)
		i++
		if batch == 1 {
			if _, err := lim.Allow(c, Now(at), 1); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if calls = append(calls, lim.Call(c, Now(at), 1)); len(calls) == batch {
			send()
		}
	}
	if len(calls) > 0 {
		send()
	}
	for len(out) > 0 {
		wait()
	}
	b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "decisions/s")
}

// BenchmarkPipeline compares one script call per round trip with pipelines of several
// sizes, on miniredis and (RLSIM_REDIS_URL) a real server, where a batch is sent as one
// pipeline or split by client over DefaultLanes connections at once:
// go test -run '^$' -bench Pipeline ./store
func BenchmarkPipeline(b *testing.B) {
	for _, batch := range []int{1, 16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("miniredis/batch=%d", batch), func(b *testing.B) {
			r, err := NewMiniredis()
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			benchmarkPipelined(b, r, "rl:", batch, time.Millisecond, 1)
		})
	}
	url := os.Getenv("RLSIM_REDIS_URL")
	for _, batch := range []int{1, 16, 64, 256, 1024} {
		for _, lanes := range []int{1, DefaultLanes} {
			if lanes > 1 && batch < 2*minLaneCalls {
				continue
			}
			b.Run(fmt.Sprintf("redis/batch=%d/lanes=%d", batch, lanes), func(b *testing.B) {
				benchmarkOnRedis(b, url, "spread", batch, lanes, time.Millisecond, 1)
			})
		}
	}
}

// BenchmarkPipelineOneWindow is the peer of redis-benchmark -P 100 sending EVALSHA of the
// two-counter script for 100 clients at one instant (scripts/bench.sh): the same calls,
// 1 µs apart so that a run stays in one window as redis-benchmark's do, in batches of 256
// on one connection and on DefaultLanes (RLSIM_REDIS_URL), each batch made while the one
// before is on its way, as a run sends them; and, to see what moves the ratio, on 2
// connections, in batches of 1024 ("batch=1024/lanes=N"), and one batch at a time, made
// only once the one before is back ("waiting/lanes=N").
func BenchmarkPipelineOneWindow(b *testing.B) {
	url := os.Getenv("RLSIM_REDIS_URL")
	type variant struct {
		batch, lanes int
		away         int // batches on their way while the next is made (0: waiting)
	}
	var variants []variant
	for _, batch := range []int{256, 1024} {
		for _, lanes := range []int{1, 2, DefaultLanes} {
			variants = append(variants, variant{batch, lanes, 1})
		}
	}
	variants = append(variants, variant{256, 1, 0}, variant{256, DefaultLanes, 0})
	for _, v := range variants {
		name := fmt.Sprintf("lanes=%d", v.lanes)
		if v.batch != 256 {
			name = fmt.Sprintf("batch=%d/lanes=%d", v.batch, v.lanes)
		}
		if v.away == 0 {
			name = "waiting/" + name
		}
		b.Run(name, func(b *testing.B) {
			benchmarkOnRedis(b, url, "window", v.batch, v.lanes, time.Microsecond, v.away)
		})
	}
}

// BenchmarkPipelineManyKeys is BenchmarkPipelineOneWindow over a fleet's worth of keys,
// the peer of redis-benchmark -P 100 -r 140000 (scripts/bench.sh): each call's client
// drawn at random among 140000, as redis-benchmark draws __rand_int__, so both create
// about as many keys and look them up in as large a keyspace; batches of 256, and of 1024
// ("batch=1024"), four times as many calls on their way; one batch on its way while the
// next is made, three ("away=3", the depth runs kept before) and eight ("away=8"), as a
// pipelined run keeps them (run.PipelineDepth).
func BenchmarkPipelineManyKeys(b *testing.B) {
	url := os.Getenv("RLSIM_REDIS_URL")
	for _, lanes := range []int{1, DefaultLanes} {
		for _, away := range []int{1, 3, 8} {
			name := ""
			if away > 1 {
				name = fmt.Sprintf("away=%d/", away)
			}
			b.Run(fmt.Sprintf("keys=140000/%slanes=%d", name, lanes), func(b *testing.B) {
				benchmarkOnRedisKeys(b, url, "keys", 256, lanes, time.Microsecond, away, 140000)
			})
			b.Run(fmt.Sprintf("keys=140000/%sbatch=1024/lanes=%d", name, lanes), func(b *testing.B) {
				benchmarkOnRedisKeys(b, url, "keys", 1024, lanes, time.Microsecond, away, 140000)
			})
		}
	}
}

// benchmarkOnRedis runs benchmarkPipelined on the real server at url (skipped without
// one) with batch calls per pipeline on lanes connections, calls step apart, under a
// prefix of its own that it deletes afterwards.
func benchmarkOnRedis(b *testing.B, url, kind string, batch, lanes int, step time.Duration, away int) {
	benchmarkOnRedisKeys(b, url, kind, batch, lanes, step, away, 0)
}

func benchmarkOnRedisKeys(b *testing.B, url, kind string, batch, lanes int, step time.Duration, away int, keys int) {
	if url == "" {
		b.Skip("RLSIM_REDIS_URL not set")
	}
	r, err := NewRedis(url)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.SetLanes(lanes)
	prefix := fmt.Sprintf("rlsim-bench:%s:%d:%d:%d:%d:", kind, batch, lanes, away, time.Now().UnixNano())
	benchmarkPipelinedKeys(b, r, prefix, batch, step, away, keys)
	r.DeleteUnder(prefix)
}
