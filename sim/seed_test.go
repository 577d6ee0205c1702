package sim

import "testing"

// Every output drawn from a derived seed (the retry experiments' runs, an error mix's
// malformed requests, a cluster scenario's fleets) rests on these values: a change to
// Derive, Sibling or Mix moves goldens, so it must fail here first.
func TestDeriveIsStable(t *testing.T) {
	for _, c := range []struct {
		seed   uint64
		salt   Salt
		hi, lo uint64
		want   uint64
	}{
		{1, BackoffRunSalt, 100, 0, 0x4c004918a8b2982b},
		{7, BackoffRunSalt, 1000, 3, 0x6e91d7583882f7b4},
		{0, BackoffRunSalt, 0, 0, 0xbfda6c1630271e37},
		{1 ^ 100<<32, ErrorMixSalt, 0, 0, 0x3ace7f02f0b07535},
		{7 ^ 1000<<32, ErrorMixSalt, 0, 3, 0xb1933c6621ae104d},
		{0, ErrorMixSalt, 0, 0, 0x96dcb1d7126a6eba},
	} {
		if got := Derive(c.seed, c.salt, c.hi, c.lo); got != c.want {
			t.Errorf("Derive(%#x, %#x, %d, %d) = %#x, want %#x", c.seed, uint64(c.salt), c.hi, c.lo, got, c.want)
		}
	}
	for _, c := range []struct {
		seed uint64
		i    int
		want uint64
	}{{1, 0, 0x9e3779b97f4a7c14}, {42, 2, 0xdaa66d2c7ddf7415}} {
		if got := Sibling(c.seed, c.i); got != c.want {
			t.Errorf("Sibling(%d, %d) = %#x, want %#x", c.seed, c.i, got, c.want)
		}
	}
}

// Derived seeds of nearby parts are all different: many clients and runs, two salts.
func TestDeriveSpreads(t *testing.T) {
	seen := map[uint64]bool{}
	for _, salt := range []Salt{BackoffRunSalt, ErrorMixSalt} {
		for hi := range uint64(50) {
			for lo := range uint64(50) {
				seen[Derive(3, salt, hi, lo)] = true
			}
		}
	}
	if len(seen) != 2*50*50 {
		t.Fatalf("%d distinct seeds of %d", len(seen), 2*50*50)
	}
	siblings := map[uint64]bool{}
	for i := range 100 {
		siblings[Sibling(3, i)] = true
	}
	if len(siblings) != 100 {
		t.Fatalf("%d distinct siblings of 100", len(siblings))
	}
}
