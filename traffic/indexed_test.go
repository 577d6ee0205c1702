package traffic

import (
	"math/rand/v2"
	"testing"
	"time"
)

// NextIndexed must yield what Next yields, draw for draw, or a run would change with the
// path the runner takes.
func TestNextIndexedMatchesNext(t *testing.T) {
	for _, pop := range []Popularity{Uniform, Zipf} {
		p := Poisson{Rate: 2000, Keys: 1000, KeyPrefix: "user_", Popularity: pop, ZipfS: 1.1, End: 5 * time.Second, Class: Attacker}
		a := NewPoisson(p, rand.New(rand.NewPCG(7, 8)))
		b := NewPoisson(p, rand.New(rand.NewPCG(7, 8)))
		n := 0
		for {
			var ra, rb Request
			okA := a.Next(&ra)
			k, okB := b.NextIndexed(&rb)
			if okA != okB {
				t.Fatalf("request %d: Next ok=%v, NextIndexed ok=%v", n, okA, okB)
			}
			if !okA {
				break
			}
			rb.Key = b.KeyName(k)
			if ra != rb {
				t.Fatalf("request %d: Next %+v, NextIndexed %+v", n, ra, rb)
			}
			n++
		}
		if n < 9000 {
			t.Fatalf("only %d requests in 5 s at 2000/s", n)
		}
	}
}

func TestNextIndexedDoesNotAllocate(t *testing.T) {
	s := NewPoisson(Poisson{Rate: 1000, Keys: 1 << 20, KeyPrefix: "k", Popularity: Zipf, ZipfS: 1.1, End: time.Hour}, rand.New(rand.NewPCG(1, 2)))
	var r Request
	if a := testing.AllocsPerRun(1000, func() { s.NextIndexed(&r) }); a != 0 {
		t.Fatalf("NextIndexed allocates %v times per request", a)
	}
}
