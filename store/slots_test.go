package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlsim/rlsim/algorithms"
)

// Redis Cluster's key hash: CRC16-CCITT (XMODEM), whose check value is 0x31C3, and the
// hash tag rules of the Redis Cluster specification, with its examples.
func TestSlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31c3 {
		t.Errorf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for _, tc := range []struct {
		key, tag string
		slot     int
	}{
		{"foo", "foo", 12182},
		{"{user1000}.following", "user1000", Slot("user1000")},
		{"{user1000}.followers", "user1000", Slot("user1000")},
		{"foo{}{bar}", "foo{}{bar}", -1},      // an empty tag: the whole key
		{"foo{{bar}}zap", "{bar", -1},         // from the first { to the first } after it
		{"foo{bar}{zap}", "bar", Slot("bar")}, // the first tag only
		{"{", "{", -1},
		{"}{x}", "x", Slot("x")},
	} {
		if got := HashTag(tc.key); got != tc.tag {
			t.Errorf("HashTag(%q) = %q, want %q", tc.key, got, tc.tag)
		}
		if tc.slot >= 0 && Slot(tc.key) != tc.slot {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, Slot(tc.key), tc.slot)
		}
	}
}

// clientKeys are the client keys the slot tests name store keys for: ordinary ones and
// every shape that could unmake a hash tag.
func clientKeys() []string {
	keys := []string{"user_8812", "", "}", "}x", "~", "~x", "{", "{x}", "a}b", "a{b}c", "10.0.0.1", "2001:db8::/64", "ключ", "x}"}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("user_%d", i))
	}
	return keys
}

// Every shipped script's keys for one call hash to one Redis Cluster slot, whatever the
// client key and the time: CRC16 of each key's hash tag, computed here. And the hash tag
// keeps names apart: two client keys never share a store key.
func TestEveryScriptsKeysShareASlot(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Minute}
	names := map[string]string{} // store key -> client key and script
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
	for _, alg := range append(slices.Clone(Algorithms()), "lease") {
		lim, err := NewLimiter(NewModel(), alg, p, "rl:")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range clientKeys() {
			at := now + rng.Int64N(int64(time.Hour))
			keys := lim.Keys(key, at)
			if !SameSlot(keys) {
				t.Errorf("%s for %q: keys %q in slots %d", alg, key, keys, slotsOf(keys))
			}
			for _, k := range keys {
				if HashTag(k) == k {
					t.Errorf("%s for %q: key %q has no hash tag", alg, key, k)
				}
				if other, ok := names[k]; ok && other != alg+" "+key {
					t.Errorf("store key %q is both %s's and %s %q's", k, other, alg, key)
				}
				names[k] = alg + " " + key
			}
		}
	}
	for _, ttl := range []bool{false, true} {
		n, err := NewNonAtomic(NewModel(), p, "rl:", ttl)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range clientKeys() {
			if k := n.Key(key, now); HashTag(k) == k || Slot(k) != Slot(string(appendTagged(nil, key))) {
				t.Errorf("non-atomic counter %q for %q: not tagged with its client key", k, key)
			}
		}
	}
}

func slotsOf(keys []string) []int {
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = Slot(k)
	}
	return out
}

// The notes' two-key script names its counters as the notes' example does, rl:<client>:<window>:
// without a hash tag, almost no previous/current pair shares a slot, so Redis Cluster
// refuses the call (CROSSSLOT).
func TestNotesNamesSpanSlots(t *testing.T) {
	same := 0
	for i := range 10000 {
		prev, curr := fmt.Sprintf("rl:user_8812:%d", 29454360+i-1), fmt.Sprintf("rl:user_8812:%d", 29454360+i)
		if Slot(prev) == Slot(curr) {
			same++
		}
	}
	if same > 10 {
		t.Errorf("%d of 10000 untagged pairs share a slot", same)
	}
}

// A prefix whose braces would take the client key's place as an empty tag is refused; one
// with a tag of its own is taken, and puts every key in its slot.
func TestLimiterPrefixBraces(t *testing.T) {
	p := algorithms.Policy{Limit: 10, Window: time.Minute}
	if _, err := NewLimiter(NewModel(), "sliding-window", p, "rl{}:"); err == nil || !strings.Contains(err.Error(), "empty hash tag") {
		t.Errorf("prefix rl{}: taken: %v", err)
	}
	lim, err := NewLimiter(NewModel(), "sliding-window", p, "{rl}:")
	if err != nil {
		t.Fatal(err)
	}
	if keys := lim.Keys("user_1", 0); HashTag(keys[0]) != "rl" || !SameSlot(keys) {
		t.Errorf("prefix {rl}: keys %q", keys)
	}
}

// clusterClient connects to the Redis Cluster named by RLSIM_REDIS_CLUSTER_URL (a node's
// redis:// URL; .ci/run starts three on loopback), or skips the test.
func clusterClient(t *testing.T) *redis.ClusterClient {
	t.Helper()
	url := os.Getenv("RLSIM_REDIS_CLUSTER_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_CLUSTER_URL not set: no Redis Cluster to run against")
	}
	opt, err := redis.ParseClusterURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.DisableIdentity = true
	c := redis.NewClusterClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// On a real Redis Cluster: the server's CLUSTER KEYSLOT agrees with Slot on every key the
// scripts name, and a random trace of every script, each call's keys in one slot, runs
// without CROSSSLOT and decides as the model does, call for call.
func TestScriptsRunOnRedisCluster(t *testing.T) {
	c := clusterClient(t)
	ctx := t.Context()
	prefix := testPrefix(t, 1)
	p := algorithms.Policy{Limit: 5, Window: time.Second, Burst: 7}
	model := NewModel()
	var written []string
	defer func() {
		for _, k := range written {
			c.Del(ctx, k)
		}
	}()
	for _, alg := range append(slices.Clone(Algorithms()), "lease") {
		onModel, err := NewLimiter(model, alg, p, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"user_8812", "", "}x", "a{b}c"} {
			for _, k := range onModel.Keys(key, 0) {
				got, err := c.ClusterKeySlot(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				if int(got) != Slot(k) {
					t.Errorf("CLUSTER KEYSLOT %q = %d, Slot says %d", k, got, Slot(k))
				}
			}
		}
		rng := rand.New(rand.NewPCG(9, uint64(len(alg))))
		now := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()
		for i := range 300 {
			now += rng.Int64N(int64(100 * time.Millisecond))
			key := fmt.Sprintf("user_%d", rng.IntN(20))
			call := onModel.Call(key, Now(now), 1+rng.Int64N(2))
			model.SetNow(now)
			want, _ := model.Eval(call.Script, call.Keys, call.Args...)
			argv := make([]any, len(call.Args))
			for j, a := range call.Args {
				if j == argKeep {
					a += WallMargin.Milliseconds()
				}
				argv[j] = a
			}
			got, err := call.Script.lua.Run(ctx, c, call.Keys, argv...).Int64Slice()
			if err != nil {
				t.Fatalf("%s call %d (keys %q): %v", alg, i, call.Keys, err)
			}
			written = append(written, call.Keys...)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s call %d (keys %q): cluster %v, model %v", alg, i, call.Keys, got, want)
			}
		}
	}
	// The notes' names, untagged, are refused.
	err := c.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{prefix + "user_8812:1", prefix + "user_8812:2"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Errorf("two untagged keys of different slots: %v, want CROSSSLOT", err)
	}
}

// The keys a script's command names, as the cross-slot watch reads them.
func TestKeysOf(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		want []string
	}{
		{"GET", []string{"a"}, []string{"a"}},
		{"ZADD", []string{"a", "1", "m"}, []string{"a"}},
		{"MGET", []string{"a", "b"}, []string{"a", "b"}},
		{"DEL", []string{"a", "b", "c"}, []string{"a", "b", "c"}},
		{"MSET", []string{"a", "1", "b", "2"}, []string{"a", "b"}},
		{"TIME", nil, nil},
		{"EVALSHA", []string{"sha", "1", "k"}, nil},
		{"PING", []string{"x"}, nil},
	} {
		if got := keysOf(tc.cmd, tc.args); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("keysOf(%s %q) = %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
	}
	if k := TaggedKey("rlsim:x:", "user_8812"); k != "rlsim:x:{user_8812}" || Slot(k+":prev") != Slot(k) {
		t.Errorf("TaggedKey = %q", k)
	}
}
