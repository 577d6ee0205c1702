package algorithms

import (
	"crypto/sha256"
	"encoding/binary"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stamped is one request of a trace whose timestamps may disagree with the order it is
// delivered in: it reaches the limiter at its true time at (traces are delivered in
// non-decreasing at), stamped with stamp, which is the now the limiter is told.
type stamped struct {
	key   uint32
	at    int64 // true time, nanoseconds
	stamp int64 // the time the limiter sees
	cost  int64
}

// overloadTrace returns n requests over keys in non-decreasing true time, each stamped
// with its true time: runs of simultaneous requests and short gaps that offer every key
// about twice its rate in requests (more in cost), and now and then an idle stretch of up
// to two windows after which buckets are full and windows have turned over. A quarter of
// the requests cost 1 to burst+2, so some can never pass.
func overloadTrace(rng *rand.Rand, p Policy, keys, n int) []stamped {
	interval := int64(p.Window) / p.Limit
	meanGap := max(interval/int64(2*keys), 1)
	now := epoch + rng.Int64N(int64(p.Window))
	trace := make([]stamped, n)
	for i := range trace {
		switch r := rng.IntN(256); {
		case r < 64: // same instant
		case r < 255:
			now += rng.Int64N(2 * meanGap)
		default:
			now += rng.Int64N(2 * int64(p.Window))
		}
		cost := int64(1)
		if rng.IntN(4) == 0 {
			cost = 1 + rng.Int64N(p.EffectiveBurst()+2)
		}
		trace[i] = stamped{key: uint32(rng.IntN(keys)), at: now, stamp: now, cost: cost}
	}
	return trace
}

// traceSeeds are the seeds the trace tests run; each seed gives one trace per policy.
var traceSeeds = []uint64{1, 2, 3}

// traceFor returns the ordered trace of a policy and seed that the trace tests share.
func traceFor(pi int, seed uint64) []stamped {
	return overloadTrace(rand.New(rand.NewPCG(seed, uint64(pi))), propertyPolicies[pi], 3, 3000)
}

// decisionDigest runs trace through a new limiter of the named algorithm and returns
// the SHA-256 of every field of every Decision in order, and the number admitted.
func decisionDigest(name string, p Policy, trace []stamped) (string, int) {
	lim, _ := New(name, p)
	buf := make([]byte, 0, len(trace)*33)
	admitted := 0
	for _, a := range trace {
		d := lim.Allow(a.key, a.stamp, a.cost)
		var allowed byte
		if d.Allowed {
			allowed = 1
			admitted++
		}
		buf = append(buf, allowed)
		for _, v := range []int64{d.Remaining, int64(d.RetryAfter), int64(d.Reset), int64(d.Delay)} {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
		}
	}
	return fmt.Sprintf("%x", sha256.Sum256(buf)), admitted
}

// TestOrderedDecisionsUnchanged pins every field of every decision on ordered traces to
// testdata/ordered-decisions.golden, recorded before the rules for time that goes
// backwards were written: on ordered input the limiters decide byte for byte as before.
// go test ./algorithms -run TestOrderedDecisionsUnchanged -update rewrites the file.
func TestOrderedDecisionsUnchanged(t *testing.T) {
	var b strings.Builder
	for pi, p := range propertyPolicies {
		for _, seed := range traceSeeds {
			trace := traceFor(pi, seed)
			for _, name := range Names {
				digest, admitted := decisionDigest(name, p, trace)
				fmt.Fprintf(&b, "%s\t%s\tseed %d\t%d of %d admitted\t%s\n", p, name, seed, admitted, len(trace), digest)
			}
		}
	}
	path := filepath.Join("testdata", "ordered-decisions.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./algorithms -run TestOrderedDecisionsUnchanged -update creates it)", err)
	}
	if got := b.String(); got != string(want) {
		gotLines, wantLines := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gotLines), len(wantLines)) {
			if gotLines[i] != wantLines[i] {
				t.Errorf("ordered decisions changed:\n got %s\nwant %s", gotLines[i], wantLines[i])
			}
		}
		if len(gotLines) != len(wantLines) {
			t.Errorf("%d lines, golden has %d", len(gotLines), len(wantLines))
		}
	}
}
