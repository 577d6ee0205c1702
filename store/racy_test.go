package store

import (
	"fmt"
	"testing"
	"time"
)

// readWriteTrace runs the plain commands on rw — counters incremented and set, bucket
// hashes written, all with TTLs, read back as the clock moves past some of the TTLs — and
// returns what every read returned.
func readWriteTrace(t *testing.T, rw ReadWriter, prefix string) []string {
	t.Helper()
	base := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	var out []string
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", rw.Name(), err)
		}
	}
	read := func(at time.Duration) {
		t.Helper()
		must(rw.SetNow(base + int64(at)))
		v, err := rw.Get(prefix+"a", prefix+"b", prefix+"missing")
		must(err)
		bt, bs, ok, err := rw.GetBucket(prefix + "bucket")
		must(err)
		out = append(out, fmt.Sprintf("%s: a=%d b=%d missing=%d bucket=%v/%d/%d", at, v[0], v[1], v[2], ok, bt, bs))
	}
	must(rw.SetNow(base))
	read(0)
	n, err := rw.IncrExpire(prefix+"a", 3, 1500)
	must(err)
	out = append(out, fmt.Sprint("incr ", n))
	n, err = rw.IncrExpire(prefix+"a", 2, 1500) // the TTL starts again
	must(err)
	out = append(out, fmt.Sprint("incr ", n))
	must(rw.SetExpire(prefix+"b", 1234567890123, 700))
	must(rw.SetBucket(prefix+"bucket", 1767261600000000, 42, 1000))
	read(500 * time.Millisecond)
	must(rw.SetBucket(prefix+"bucket", 1767261600500000, 7, 1000))
	read(999 * time.Millisecond) // b has expired
	read(1499 * time.Millisecond)
	read(1500 * time.Millisecond) // a has expired; the bucket's TTL ran out at 1.5 s
	return out
}

// The plain commands read and write alike on the model and on miniredis, leaving the
// same keys; on a real server (RLSIM_REDIS_URL) they return the same values, TTLs apart.
func TestReadWriterFacesAgree(t *testing.T) {
	want := readWriteTrace(t, NewModel(), "rw:")
	if want[len(want)-1] != "1.5s: a=0 b=0 missing=0 bucket=false/0/0" || want[3] != "500ms: a=5 b=1234567890123 missing=0 bucket=true/1767261600000000/42" {
		t.Fatalf("the model: %q", want)
	}
	mini := miniFace(t)
	if got := readWriteTrace(t, mini, "rw:"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("miniredis:\n%q\nthe model:\n%q", got, want)
	}
	if keys, _ := mini.Keys("rw:"); len(keys) != 0 {
		t.Errorf("miniredis kept %v after every TTL ran out", keys)
	}

	server := realRedis(t)
	prefix := testPrefix(t, 0)
	// A real server's TTLs run on its own clock: write, then read at once.
	n, err := server.IncrExpire(prefix+"a", 4, 60000)
	if err != nil || n != 4 {
		t.Fatalf("INCRBY: %d, %v", n, err)
	}
	if err := server.SetExpire(prefix+"b", 99, 60000); err != nil {
		t.Fatal(err)
	}
	if err := server.SetBucket(prefix+"bucket", 17, 5, 60000); err != nil {
		t.Fatal(err)
	}
	v, err := server.Get(prefix+"a", prefix+"b", prefix+"none")
	bt, bs, ok, berr := server.GetBucket(prefix + "bucket")
	if err != nil || berr != nil || fmt.Sprint(v) != "[4 99 0]" || !ok || bt != 17 || bs != 5 {
		t.Errorf("Redis: %v %v, bucket %v %d %d %v", v, err, ok, bt, bs, berr)
	}
	keys, err := server.Keys(prefix)
	if err != nil || len(keys) != 3 {
		t.Fatalf("Redis keys: %v, %v", keys, err)
	}
	// On a real server the TTL is garbage collection in wall time: the minute asked for
	// plus WallMargin, so a slow run never finds a key gone before its data is stale.
	for _, k := range keys {
		if k.TTL == NoTTL || k.TTL <= WallMargin || k.TTL > WallMargin+time.Minute {
			t.Errorf("Redis: %s has TTL %s, want a minute plus %s", k.Name, k.TTL, WallMargin)
		}
	}
	if err := server.Delete(prefix+"a", prefix+"b", prefix+"bucket"); err != nil {
		t.Fatal(err)
	}
}
