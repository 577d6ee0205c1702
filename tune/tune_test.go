package tune

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/traffic"
)

var epoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC).UnixNano()

// byConstruction is a sample whose answer is known: legit users each send bursts of b at
// once, one burst every b/r seconds (r per second on average) for a minute; one attacker
// floods at k·r per second for five seconds. Each user has an address of its own.
type byConstruction struct {
	users, b   int
	r          float64 // legit requests per second per user
	k          int     // the attacker sends k·r per second
	attackFrom time.Duration
	attackFor  time.Duration
}

func (c byConstruction) sample(t *testing.T) *Sample {
	t.Helper()
	bld, err := NewBuilder("constructed", []string{"user", "ip"})
	if err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		at  int64
		req traffic.Request
		att bool
	}
	var all []arrival
	gap := time.Duration(float64(c.b) / c.r * float64(time.Second))
	for u := range c.users {
		offset := time.Duration(u) * 100 * time.Millisecond
		for at := offset; at < time.Minute; at += gap {
			for range c.b {
				all = append(all, arrival{at: epoch + int64(at), req: traffic.Request{Cost: 1, User: fmt.Sprintf("user_%d", u),
					ClientIP: netip.AddrFrom4([4]byte{198, 51, 100, byte(u + 1)})}})
			}
		}
	}
	step := time.Duration(float64(time.Second) / (c.r * float64(c.k)))
	for at := c.attackFrom; at < c.attackFrom+c.attackFor; at += step {
		all = append(all, arrival{at: epoch + int64(at), req: traffic.Request{Cost: 1, User: "mallory",
			ClientIP: netip.MustParseAddr("203.0.113.9")}, att: true})
	}
	// Delivery order: by time, ties in the order made.
	for i := 1; i < len(all); i++ {
		for j := i; j > 0 && all[j].at < all[j-1].at; j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	for _, a := range all {
		bld.Add(a.at, &a.req, a.att)
	}
	return bld.Finish()
}

func mustGoal(t *testing.T, text string) Goal {
	t.Helper()
	g, err := ParseGoal(text)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTokenBucketFindsTheConstructedAnswer(t *testing.T) {
	c := byConstruction{users: 5, b: 4, r: 2, k: 10, attackFrom: 30 * time.Second, attackFor: 5 * time.Second}
	s := c.sample(t)
	sp := Space{Families: []string{algorithms.TokenBucketName}, Keys: []string{"user", "ip"}, Windows: []time.Duration{time.Second},
		Limits: Range{Lo: 1, Hi: 10}}
	for _, workers := range []int{1, 2} {
		res, err := Search(s, sp, []Goal{mustGoal(t, "legit-refused<=0%")}, workers)
		if err != nil {
			t.Fatal(err)
		}
		rec := res.Recommended
		if rec == nil {
			t.Fatalf("no recommendation; closest %+v", res.Closest)
		}
		if float64(rec.Limit) < c.r || rec.Burst < int64(c.b) || rec.LegitRejected != 0 {
			t.Fatalf("recommended %s with %d legit refused; want rate >= %g, burst >= %d, none refused", rec.Candidate, rec.LegitRejected, c.r, c.b)
		}
		// By hand: the attacker's bucket starts full (b) and refills at r over the 4.95 s
		// between its first and last request: floor(4 + 2·4.95) = 13 of its 100.
		if rec.Attacker != 100 || rec.AttackerAdmitted != 13 {
			t.Fatalf("attacker admitted %d of %d, want 13 of 100 (%s)", rec.AttackerAdmitted, rec.Attacker, rec.Candidate)
		}
		if rec.Limit != 2 || rec.Burst != 4 {
			t.Fatalf("recommended %s, want 2/1s burst 4 (any other admits more of the attacker)", rec.Candidate)
		}
	}
}

func TestSkipRulesAgreeWithLimiters(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	bld, _ := NewBuilder("random", []string{"user"})
	at := epoch
	for range 4000 {
		at += int64(rng.ExpFloat64() * float64(40*time.Millisecond))
		u := rng.IntN(30)
		cost := int64(1)
		if rng.IntN(10) == 0 {
			cost = 3
		}
		bld.Add(at, &traffic.Request{Cost: cost, User: fmt.Sprintf("u%d", u*u%17)}, u%7 == 0)
	}
	s := bld.Finish()
	kg := s.Keying("user")
	for _, f := range families {
		if f.skip == skipNone {
			continue
		}
		plain := f
		plain.skip = skipNone
		for _, w := range []time.Duration{time.Second, 10 * time.Second} {
			for _, l := range []int64{1, 3, 8, 20, 60} {
				for _, b := range []int64{1, 4, 9, 30} {
					c, ok := candidate(&f, "user", l, w, b)
					if !ok {
						continue
					}
					fast, err := newEvaluator(s, kg, newProfiles(s, kg)).run(&f, c, nil)
					if err != nil {
						t.Fatal(err)
					}
					slow, err := newEvaluator(s, kg, newProfiles(s, kg)).run(&plain, c, nil)
					if err != nil {
						t.Fatal(err)
					}
					fast.StateBytesPerKey, slow.StateBytesPerKey = 0, 0
					if !reflect.DeepEqual(fast, slow) {
						t.Fatalf("%s: skipping keys gives %+v, running them %+v", c, fast, slow)
					}
				}
			}
		}
	}
}

func TestParseGoal(t *testing.T) {
	good := map[string]Goal{
		"legit-refused<=0.1%":     {Metric: LegitRefused, Max: 0.001},
		"attacker-admitted<=5%":   {Metric: AttackerAdmitted, Max: 0.05},
		"backend-peak<=500/s":     {Metric: BackendPeak, Max: 500},
		"backend-peak<=500":       {Metric: BackendPeak, Max: 500},
		"over-admission<=1.05":    {Metric: OverAdmission, Max: 1.05},
		"false-rejects<=0.01":     {Metric: FalseRejects, Max: 0.01},
		"key-refused<=0.1%@p99.9": {Metric: KeyRefused, Max: 0.001, Percentile: 0.999},
		"legit-refused <= 0%":     {Metric: LegitRefused, Max: 0},
	}
	for text, want := range good {
		g, err := ParseGoal(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		want.Text = text
		if g.Metric != want.Metric || diff(g.Percentile, want.Percentile) > 1e-12 || g.Text != text || diff(g.Max, want.Max) > 1e-12 {
			t.Fatalf("%q: got %+v, want %+v", text, g, want)
		}
	}
	bad := map[string]int{ // the column the error names
		"legit-refused<0.1%":       14,
		"legit-refused":            14,
		"legit-rejected<=0.1%":     1,
		"legit-refused<=x%":        16,
		"legit-refused<=150%":      16,
		"legit-refused<=2":         16,
		"over-admission<=1.05%":    21,
		"attacker-admitted<=5%@p9": 22,
		"key-refused<=0.1%":        18,
		"key-refused<=0.1%@q99":    19,
		"backend-peak<=-1/s":       15,
	}
	for text, col := range bad {
		_, err := ParseGoal(text)
		ge, ok := err.(*GoalError)
		if !ok {
			t.Fatalf("%q: got %v, want a GoalError", text, err)
		}
		if ge.Column != col {
			t.Errorf("%q: error at column %d (%v), want %d", text, ge.Column, err, col)
		}
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestKeyPercentileGoal(t *testing.T) {
	// Ten users of whom one bursts 10 at once; a limit that refuses only that user's
	// excess meets "at most 0% refused for 90% of keys" and not for 100%.
	bld, _ := NewBuilder("ten", []string{"user", "ip"})
	for u := range 10 {
		n := 1
		if u == 3 {
			n = 10
		}
		for range n {
			bld.Add(epoch+int64(u)*int64(time.Second), &traffic.Request{Cost: 1, User: fmt.Sprintf("u%d", u),
				ClientIP: netip.AddrFrom4([4]byte{10, 0, 0, byte(u)})}, false)
		}
	}
	s := bld.Finish()
	sp := Space{Families: []string{algorithms.FixedWindowName}, Keys: []string{"user", "ip"}, Windows: []time.Duration{time.Minute},
		Limits: Range{Values: []int64{2}}}
	res, err := Search(s, sp, []Goal{mustGoal(t, "key-refused<=0%@p90")}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recommended == nil || res.Recommended.LegitRejected != 8 {
		t.Fatalf("got %+v, want limit 2 recommended with user u3's 8 refused", res.Recommended)
	}
	res, err = Search(s, sp, []Goal{mustGoal(t, "key-refused<=0%@p100")}, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.Recommended != nil || res.Closest == nil {
		t.Fatalf("p100 met by %+v; one key has 80%% refused", res.Recommended)
	}
}

func TestEmptySpace(t *testing.T) {
	c := byConstruction{users: 2, b: 2, r: 1, k: 3, attackFrom: time.Second, attackFor: time.Second}
	s := c.sample(t)
	_, err := Search(s, Space{Families: []string{"kong"}, Keys: []string{"user"}, Windows: []time.Duration{10 * time.Second}}, nil, 1)
	if err == nil || !errorsIs(err, ErrEmptySpace) {
		t.Fatalf("kong over a 10s window: got %v, want the empty space", err)
	}
}

func TestLadderAndRange(t *testing.T) {
	if got := ladder(1, 1000, 4); !reflect.DeepEqual(got, []int64{1, 10, 100, 1000}) {
		t.Fatalf("ladder(1, 1000, 4) = %v", got)
	}
	if got := ladder(5, 7, 8); !reflect.DeepEqual(got, []int64{5, 6, 7}) {
		t.Fatalf("ladder(5, 7, 8) = %v", got)
	}
	for in, want := range map[string]Range{"50..500": {Lo: 50, Hi: 500}, "200,50,100,50": {Values: []int64{50, 100, 200}}, "7": {Values: []int64{7}}} {
		got, err := ParseRange(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseRange(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0..5", "9..3", "a,b", "1..", "-1"} {
		if _, err := ParseRange(in); err == nil {
			t.Fatalf("ParseRange(%q) accepted", in)
		}
	}
}

func TestEveryFamilyIsARegisteredKind(t *testing.T) {
	for _, f := range families {
		if algorithms.Lookup(f.Name) == nil {
			t.Fatalf("family %s names no kind", f.Name)
		}
		text, ok := f.spec(10, time.Second, 5)
		if !ok {
			t.Fatalf("%s cannot write 10/1s", f.Name)
		}
		if _, err := algorithms.Parse(text); err != nil {
			t.Fatalf("%s writes %q: %v", f.Name, text, err)
		}
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

// FuzzParseGoal: any text is a goal or one GoalError whose column lies within it (or
// just past its end), never a panic; a goal's text renders back as given.
func FuzzParseGoal(f *testing.F) {
	for _, s := range []string{"legit-refused<=0.1%", "key-refused<=0.1%@p99.9", "backend-peak<=500/s", "over-admission<=1.05", "x<=", "<=", "@p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGoal(s)
		if err != nil {
			ge, ok := err.(*GoalError)
			if !ok || ge.Column < 1 || ge.Column > len(s)+1 {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if g.String() != s || g.Max < 0 || (g.Metric == KeyRefused) != (g.Percentile > 0) {
			t.Fatalf("%q parsed as %+v", s, g)
		}
	})
}
