package run

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/rlsim/rlsim/traffic"
)

// TestReplayKeysNumberAsOneByOne checks that numbering a chunk's keys at once gives each
// key the id that numbering them one by one gives: in order of first appearance, across
// IPv4 and IPv6 addresses and names, with the unkeyed requests skipped, and through the
// address table's growth.
func TestReplayKeysNumberAsOneByOne(t *testing.T) {
	var keys []traffic.Key
	var unkeyed []bool
	for i := range 5000 {
		var k traffic.Key
		switch i % 7 {
		case 0:
			k.Name = fmt.Sprintf("user_%d", i%300)
		case 1:
			k.Addr = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i % 50)})
		default:
			k.Addr = netip.AddrFrom4([4]byte{10, byte(i % 3), byte(i * 7 % 251), byte(i * 13 % 253)})
		}
		keys = append(keys, k)
		unkeyed = append(unkeyed, i%11 == 5)
	}
	one := newReplayKeys()
	want := make([]uint32, len(keys))
	for i, k := range keys {
		if !unkeyed[i] {
			want[i] = one.id(k)
		}
	}
	all := newReplayKeys()
	pending := all.pending(chunkSize)
	got := make([]uint32, len(keys))
	for from := 0; from < len(keys); from += chunkSize {
		to := min(from+chunkSize, len(keys))
		n := copy(pending, keys[from:to])
		all.number(got[from:to], pending[:n], unkeyed[from:to])
		for i := range pending[:n] {
			if pending[i] != (traffic.Key{}) {
				t.Fatalf("number kept key %d of a chunk; it lets go of them", i)
			}
		}
	}
	for i := range keys {
		if got[i] != want[i] {
			t.Fatalf("request %d (%v, unkeyed %v): id %d, one by one %d", i, keys[i], unkeyed[i], got[i], want[i])
		}
	}
	if all.next != one.next || all.next < 500 {
		t.Fatalf("%d keys numbered at once, %d one by one (want the same, hundreds)", all.next, one.next)
	}
	if all.heldBytes() != one.heldBytes() {
		t.Fatalf("held %d bytes numbered at once, %d one by one", all.heldBytes(), one.heldBytes())
	}
}
