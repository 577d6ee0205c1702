package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// CounterBytes against the calibration: every step of MEMORY USAGE measured on Redis
// 7.0.15 (the last name length of each size and the first of the next).
func TestCounterBytesCalibration(t *testing.T) {
	measured := [][2]int64{
		{1, 64}, {6, 64}, {7, 72}, {14, 72}, {15, 88}, {30, 88}, {31, 104}, {44, 104},
		{45, 120}, {60, 120}, {61, 136}, {124, 184}, {125, 216}, {156, 216}, {157, 248},
		{252, 312}, {253, 376}, {314, 376}, {315, 440}, {506, 568}, {507, 696},
		{1018, 1080}, {1019, 1336},
	}
	for _, m := range measured {
		if got := CounterBytes(int(m[0])); got != m[1] {
			t.Errorf("CounterBytes(%d) = %d, measured %d", m[0], got, m[1])
		}
	}
}

// On a real server the model is MEMORY USAGE of the leaked counter, name length by name
// length, through every size-class step up to 1100 bytes.
func TestCounterBytesOnRealRedis(t *testing.T) {
	real := realRedis(t)
	prefix := testPrefix(t, 0)
	defer deleteUnder(t, real, prefix)
	ctx := context.Background()
	for n := len(prefix) + 1; n <= 1100; n++ {
		name := prefix + strings.Repeat("k", n-len(prefix))
		if err := real.client.HIncrBy(ctx, name, "c", 10).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := real.client.MemoryUsage(ctx, name, 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := CounterBytes(n); got != want {
			t.Errorf("name of %d bytes: MEMORY USAGE %d, CounterBytes %d", n, got, want)
		}
		real.client.Del(ctx, name)
	}
}

// loadAuditKeys writes n keys under prefix, as the scripts leave them at the end of a
// run, pipelined: of every ten, one counter whose second command never ran at the limit
// (blocked when keyed by client alone), one below it (leaked), one whose expiry was set,
// a string counter and a bucket hash with TTLs, and five sorted sets with TTLs.
func loadAuditKeys(t *testing.T, r *Redis, prefix string, n, limit int) (blocked, leaked int64) {
	t.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += 5000 {
		pipe := r.client.Pipeline()
		for i := start; i < min(start+5000, n); i++ {
			k := fmt.Sprintf("%suser_%07d", prefix, i)
			switch i % 10 {
			case 0:
				pipe.HSet(ctx, k, "c", limit)
				blocked++
			case 1:
				pipe.HSet(ctx, k, "c", limit-1)
				leaked++
			case 2:
				pipe.HSet(ctx, k, "c", limit, "e", 1784056020000000)
				pipe.PExpire(ctx, k, time.Hour)
			case 3:
				pipe.Set(ctx, k, 3, time.Hour)
			case 4:
				pipe.HSet(ctx, k, "t", 1784056020000000, "s", 5)
				pipe.PExpire(ctx, k, time.Hour)
			default:
				pipe.ZAdd(ctx, k, redis.Z{Score: float64(i), Member: fmt.Sprintf("%d:0", i)})
				pipe.PExpire(ctx, k, time.Hour)
			}
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return blocked, leaked
}

// The audit and the cleanup of a run that wrote 200000 keys on a real server: every key
// read in pipelines, blocked and leaked counted exactly, leaked bytes measured, and
// every key under the prefix, and no other, deleted.
func TestAuditAndCleanup200kOnRealRedis(t *testing.T) {
	real := realRedis(t)
	prefix := testPrefix(t, 0)
	neighbour := prefix[:len(prefix)-1] + "x:keep" // shares every byte of prefix but the last
	ctx := context.Background()
	if err := real.client.Set(ctx, neighbour, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	defer real.client.Del(ctx, neighbour)
	const n, limit = 200_000, 10
	blocked, leaked := loadAuditKeys(t, real, prefix, n, limit)
	a, err := Audit(real, prefix, limit, true)
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := leaked * CounterBytes(len(prefix)+len("user_0000000"))
	if a.Blocked != blocked || a.Leaked != leaked || a.LeakedBytes != wantBytes || !a.LeakedMeasured {
		t.Errorf("audit %+v, want %d blocked, %d leaked of %d bytes, measured", a, blocked, leaked, wantBytes)
	}
	deleted, err := real.DeleteUnder(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if deleted != n {
		t.Errorf("DeleteUnder removed %d keys, want %d", deleted, n)
	}
	if k, err := real.FirstKey(prefix); err != nil || k != "" {
		t.Errorf("after DeleteUnder: key %q left (%v)", k, err)
	}
	if v, err := real.client.Exists(ctx, neighbour).Result(); err != nil || v != 1 {
		t.Errorf("DeleteUnder took the neighbour key %s (%v)", neighbour, err)
	}
}

// On miniredis the same audit over more keys than one SCAN step: the counts of the
// model, and a prefix with glob characters matched literally.
func TestAuditAndCleanupBatches(t *testing.T) {
	mini := miniFace(t)
	prefix := "rl:a*[b]?:"
	other := "rl:aX[b]?:user_0000001" // matches prefix read as a glob pattern
	ctx := context.Background()
	mini.client.Set(ctx, other, 1, 0)
	const n, limit = 3*scanCount + 7, 10
	blocked, leaked := loadAuditKeys(t, mini, prefix, n, limit)
	a, err := Audit(mini, prefix, limit, true)
	if err != nil {
		t.Fatal(err)
	}
	want := AuditResult{Blocked: blocked, Leaked: leaked, LeakedBytes: leaked * CounterBytes(len(prefix)+len("user_0000000"))}
	if a != want {
		t.Errorf("audit %+v, want %+v", a, want)
	}
	if a, _ := Audit(mini, prefix, limit, false); a.Blocked != 0 || a.Leaked != blocked+leaked {
		t.Errorf("timestamped keys: audit %+v, want every counter without expiry leaked", a)
	}
	keys, err := mini.Keys(prefix)
	if err != nil || len(keys) != n {
		t.Fatalf("Keys: %d keys (%v), want %d", len(keys), err, n)
	}
	if first, err := mini.FirstKey(prefix); err != nil || !strings.HasPrefix(first, prefix) {
		t.Errorf("FirstKey = %q, %v", first, err)
	}
	deleted, err := mini.DeleteUnder(prefix)
	if err != nil || deleted != n {
		t.Fatalf("DeleteUnder = %d, %v; want %d", deleted, err, n)
	}
	if first, err := mini.FirstKey(prefix); err != nil || first != "" {
		t.Errorf("FirstKey after DeleteUnder = %q, %v", first, err)
	}
	if v, _ := mini.client.Exists(ctx, other).Result(); v != 1 {
		t.Error("DeleteUnder took a key the prefix matches only as a glob pattern")
	}
}

// A server that answers the connection's PING and then falls silent: the audit fails
// within a few seconds, saying which command got no reply and how long it waited — not
// that the store is unavailable.
func TestAuditOfStalledServerSaysWhat(t *testing.T) {
	addr := stallAfterPing(t)
	r, err := NewRedis("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	_, err = Audit(r, "rl:x:", 10, true)
	if err == nil || !errors.Is(err, ErrTimeout) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("want an ErrTimeout, not ErrUnavailable; got %v", err)
	}
	for _, part := range []string{`auditing the keys under "rl:x:"`, "SCAN MATCH rl:x:*", "no reply within 2s"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not say %q", err, part)
		}
	}
	if d := time.Since(start); d > 2*DefaultTimeout {
		t.Errorf("took %s to fail", d)
	}
}

// stallAfterPing serves the RESP protocol just enough for a client to connect (HELLO is
// refused, so it falls back to RESP2; PING answered) and never answers anything else.
func stallAfterPing(t *testing.T) string {
	t.Helper()
	s := newFakeServer(t, func(_ int, cmd []string) string {
		switch strings.ToUpper(cmd[0]) {
		case "HELLO":
			return "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			return "+PONG\r\n"
		}
		return "" // no reply, ever
	})
	return s.ln.Addr().String()
}
