package store

import (
	"fmt"
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
// reports decisions per second.
func benchmarkPipelined(b *testing.B, st Store, prefix string, batch int, step time.Duration) {
	lim, err := NewLimiter(st, "sliding-window", algorithms.Policy{Limit: 100, Window: time.Minute}, prefix)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	clients := make([]string, 100)
	for i := range clients {
		clients[i] = ClientName(i)
	}
	calls := make([]Call, 0, batch)
	i := 0
	for b.Loop() {
		at := now + int64(i)*int64(step)
		c := clients[i%len(clients)]
		i++
		if batch == 1 {
			if _, err := lim.Allow(c, Now(at), 1); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if calls = append(calls, lim.Call(c, Now(at), 1)); len(calls) == batch {
			if _, err := EvalBatch(st, calls); err != nil {
				b.Fatal(err)
			}
			calls = calls[:0]
		}
	}
	if len(calls) > 0 {
		if _, err := EvalBatch(st, calls); err != nil {
			b.Fatal(err)
		}
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
			benchmarkPipelined(b, r, "rl:", batch, time.Millisecond)
		})
	}
	url := os.Getenv("RLSIM_REDIS_URL")
	for _, batch := range []int{1, 16, 64, 256, 1024} {
		for _, lanes := range []int{1, DefaultLanes} {
			if lanes > 1 && batch < 2*minLaneCalls {
				continue
			}
			b.Run(fmt.Sprintf("redis/batch=%d/lanes=%d", batch, lanes), func(b *testing.B) {
				benchmarkOnRedis(b, url, "spread", batch, lanes, time.Millisecond)
			})
		}
	}
}

// BenchmarkPipelineOneWindow is the peer of redis-benchmark -P 100 sending EVALSHA of the
// two-counter script for 100 clients at one instant (scripts/bench.sh): the same calls,
// 1 µs apart so that a run stays in one window as redis-benchmark's do, in batches of 256
// on one connection and on DefaultLanes (RLSIM_REDIS_URL); and, to see what moves the
// ratio, on 2 connections and in batches of 1024 ("batch=1024/lanes=N").
func BenchmarkPipelineOneWindow(b *testing.B) {
	url := os.Getenv("RLSIM_REDIS_URL")
	type variant struct{ batch, lanes int }
	var variants []variant
	for _, batch := range []int{256, 1024} {
		for _, lanes := range []int{1, 2, DefaultLanes} {
			variants = append(variants, variant{batch, lanes})
		}
	}
	for _, v := range variants {
		batch, lanes := v.batch, v.lanes
		name := fmt.Sprintf("lanes=%d", lanes)
		if batch != 256 {
			name = fmt.Sprintf("batch=%d/lanes=%d", batch, lanes)
		}
		b.Run(name, func(b *testing.B) {
			benchmarkOnRedis(b, url, "window", batch, lanes, time.Microsecond)
		})
	}
}

// benchmarkOnRedis runs benchmarkPipelined on the real server at url (skipped without
// one) with batch calls per pipeline on lanes connections, calls step apart, under a
// prefix of its own that it deletes afterwards.
func benchmarkOnRedis(b *testing.B, url, kind string, batch, lanes int, step time.Duration) {
	if url == "" {
		b.Skip("RLSIM_REDIS_URL not set")
	}
	r, err := NewRedis(url)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.SetLanes(lanes)
	prefix := fmt.Sprintf("rlsim-bench:%s:%d:%d:%d:", kind, batch, lanes, time.Now().UnixNano())
	benchmarkPipelined(b, r, prefix, batch, step)
	keys, _ := r.Keys(prefix)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	r.Delete(names...)
}
