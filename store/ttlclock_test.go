package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// ttlScript sets, renews, reads and clears TTLs in the ways a limiter does, on keys of its
// KEYS[1]'s hash tag and on one shared key outside it, and returns what it read: the
// calls of a face counting TTLs with ttlClock must read what FastForward's give.
const ttlScript = `
local k, now = KEYS[1], tonumber(ARGV[1])
local op = math.floor(now / 1000) % 9
local c = redis.call('INCR', k .. ':c')
if c == 1 then redis.call('PEXPIRE', k .. ':c', 250) end
if op == 1 then redis.call('PEXPIRE', k .. ':c', 120, 'GT') end
if op == 2 then redis.call('PEXPIRE', k .. ':c', 90, 'LT') end
if op == 3 then redis.call('SET', k .. ':s', 'x', 'PX', 140) end
if op == 4 then redis.call('SET', k .. ':s', 'y', 'KEEPTTL') end
if op == 5 then redis.call('SET', k .. ':s', 'z') end
if op == 6 and redis.call('EXISTS', k .. ':s') == 1 then redis.call('RENAME', k .. ':s', k .. ':r') end
if op == 7 then redis.call('DEL', k .. ':r') end
if op == 8 then redis.call('PERSIST', k .. ':c') end
if redis.call('INCR', 'shared') == 1 then redis.call('PEXPIRE', 'shared', 333) end
return {c, redis.call('PTTL', k .. ':c'), redis.call('PTTL', k .. ':s'), redis.call('PTTL', k .. ':r'),
  redis.call('EXISTS', k .. ':s'), redis.call('PTTL', 'shared'), redis.call('PEXPIRETIME', k .. ':c')}
`

// TestTTLClockReadsAsFastForward runs ttlScript over 40 keys at random times on two
// embedded faces, one counting TTLs with its ttlClock, one with FastForward, and wants
// every reply and the keys left alike.
func TestTTLClockReadsAsFastForward(t *testing.T) {
	s := loadScript(t, "ttl.lua", ttlScript)
	faces := make([]*UserFace, 2)
	for i := range faces {
		r, err := NewMiniredis()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if faces[i], err = NewUserFace(r, s, algorithms.Policy{Limit: 5, Window: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	faces[1].r.ttls = nil
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for i := range 4000 {
		now += rng.Int64N(int64(15 * time.Millisecond))
		c := UserCall{Key: TaggedKey("rl:", ClientName(rng.IntN(40))), Now: now, Cost: 1}
		var got [2]any
		for j, f := range faces {
			v, err := f.evalMini(c)
			if err != nil {
				t.Fatalf("call %d on face %d: %v", i, j, err)
			}
			got[j] = v
		}
		if !reflect.DeepEqual(got[0], got[1]) {
			t.Fatalf("call %d (%s at +%v): ttlClock read %v, FastForward %v", i, c.Key, time.Duration(now%int64(time.Minute)), got[0], got[1])
		}
	}
	if faces[0].r.ttls == nil {
		t.Fatal("the ttlClock gave way to FastForward on commands it follows")
	}
	var keys [2][]KeyInfo
	for j, f := range faces {
		var err error
		if keys[j], err = f.r.Keys(""); err != nil {
			t.Fatal(err)
		}
	}
	if len(keys[0]) < 40 || !reflect.DeepEqual(keys[0], keys[1]) {
		t.Fatalf("keys left: ttlClock %d %v…, FastForward %d", len(keys[0]), keys[0][:min(3, len(keys[0]))], len(keys[1]))
	}
}

// TestTTLClockGivesWay: a script sending a command whose TTLs the clock cannot follow
// (a hash field's) hands the face to FastForward, its TTLs exact from there on.
func TestTTLClockGivesWay(t *testing.T) {
	s := loadScript(t, "hash.lua", `
redis.call('SET', KEYS[1] .. ':a', 1, 'PX', 500)
if tonumber(ARGV[1]) % 2 == 1 then redis.call('SELECT', 0) end
return redis.call('PTTL', KEYS[1] .. ':a')
`)
	r, err := NewMiniredis()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := NewUserFace(r, s, algorithms.Policy{Limit: 5, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for i, want := range []bool{true, false, false} {
		c := UserCall{Key: TaggedKey("rl:", fmt.Sprint("u", i)), Now: now + int64(i)*1000, Cost: 1}
		v, err := f.evalMini(c)
		if err != nil || v != int64(500) {
			t.Fatalf("call %d: %v, %v; want 500", i, v, err)
		}
		if on := r.ttls != nil; on != want {
			t.Fatalf("after call %d the ttlClock is on: %t, want %t", i, on, want)
		}
	}
	r.advance(now + int64(400*time.Millisecond))
	if ttl := r.mini.TTL(TaggedKey("rl:", "u0") + ":a"); ttl != 100*time.Millisecond {
		t.Fatalf("400ms later under FastForward: TTL %v, want 100ms", ttl)
	}
}
