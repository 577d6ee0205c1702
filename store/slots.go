package store

import (
	"strconv"
	"time"

	"github.com/rlsim/rlsim/algorithms"
)

// Redis Cluster keeps every key in one of Slots hash slots and runs a script only when all
// the keys it names are in one slot (else CROSSSLOT). rlsim's keys carry the limited key
// in a hash tag — rl:{user_8812}:sw:29454361 — so the keys of one call (the two counters of
// the two-counter window) always share a slot, and a slot move moves them together.

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot is the hash slot Redis Cluster keeps key in: CRC16 (XMODEM) of its hash tag — the
// text between the first '{' and the first '}' after it, when that is not empty — or of
// the whole key, modulo Slots (Redis's keyHashSlot, cluster.c).
func Slot(key string) int {
	return int(crc16(HashTag(key)) % Slots)
}

// HashTag is the part of key that Redis Cluster hashes: the text between its first '{'
// and the first '}' after it, or the whole key when there is no such pair or the text
// between them is empty ("{}").
func HashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key
				}
				return key[i+1 : j]
			}
		}
		return key
	}
	return key
}

// SameSlot reports whether every key of keys is in one hash slot, as Redis Cluster
// requires of the keys one script call names.
func SameSlot(keys []string) bool {
	for _, k := range keys[min(1, len(keys)):] {
		if Slot(k) != Slot(keys[0]) {
			return false
		}
	}
	return true
}

// crc16 is CRC16-CCITT in its XMODEM form (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes key names with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// appendTagged appends key as the hash tag of a store key name: "{" + key + "}". A key
// that would make an empty tag or one cut short ("" gives "{}", which Redis does not take
// as a tag; "}x" gives "{}x}") is written "{~" + key + "}" instead, and so, to keep names
// apart, is a key that begins with '~': the text inside the braces is never empty and
// never begins with '}', so it is always the tag, and two keys never share a name.
func appendTagged(b []byte, key string) []byte {
	b = append(b, '{')
	if key == "" || key[0] == '}' || key[0] == '~' {
		b = append(b, '~')
	}
	b = append(b, key...)
	return append(b, '}')
}

// CallSlots is how one naming of a script's keys fares on Redis Cluster over consecutive
// calls for one client: how many calls named all their keys in one slot, and the first
// call's keys and slots.
type CallSlots struct {
	Script string `json:"script"`
	// Naming is the pattern of the key names: rlsim's, with the client key as the hash
	// tag and <w> the window index, or the design notes' (rl:<client>:<the window's
	// start in Unix seconds>).
	Naming         string   `json:"naming"`
	KeysPerCall    int      `json:"keys_per_call"`
	Calls          int      `json:"calls"`
	CallsInOneSlot int      `json:"calls_in_one_slot"`
	FirstKeys      []string `json:"first_keys"`
	FirstSlots     []int    `json:"first_slots"`
}

// NotesNaming is the design notes' key pattern: the client and the window's start in
// Unix seconds, no hash tag (their INCR rl:user_8812:1784056020).
const NotesNaming = "rl:<client>:<start s>"

// SlotsOfCalls names the keys of calls consecutive calls of every script for client, one
// a window of p from start (ns since the Unix epoch), rlsim's way under "rl:" and, for the
// notes' two-key script ("notes-sliding-window": the previous and the current window's
// counters), the notes' way, and counts the calls whose keys share a Redis Cluster slot.
// The notes' row comes first.
func SlotsOfCalls(client string, p algorithms.Policy, start int64, calls int) ([]CallSlots, error) {
	if err := CheckPolicy(p); err != nil {
		return nil, err
	}
	w := int64(p.Window)
	first := floorDiv(start, w) * w
	notes := CallSlots{Script: "notes-sliding-window", Naming: NotesNaming, KeysPerCall: 2, Calls: calls}
	for i := range calls {
		at := first + int64(i)*w
		// The window's start in Unix seconds, or its index for windows shorter than one.
		name := func(t int64) string {
			if w%int64(time.Second) == 0 {
				return "rl:" + client + ":" + strconv.FormatInt(floorDiv(t, int64(time.Second)), 10)
			}
			return "rl:" + client + ":" + strconv.FormatInt(floorDiv(t, w), 10)
		}
		notes.count(i, []string{name(at - w), name(at)})
	}
	out := []CallSlots{notes}
	for _, alg := range Algorithms() {
		lim, err := NewLimiter(NewModel(), alg, p, "rl:")
		if err != nil {
			return nil, err
		}
		row := CallSlots{Script: alg, Naming: "rl:{<client>}:" + lim.tag + windowSuffix(lim.script), Calls: calls}
		for i := range calls {
			keys := lim.Keys(client, first+int64(i)*w+w/2)
			row.KeysPerCall = len(keys)
			row.count(i, keys)
		}
		out = append(out, row)
	}
	return out, nil
}

// windowSuffix is the part of a script's key pattern after its tag.
func windowSuffix(s *Script) string {
	switch s {
	case FixedWindowScript:
		return ":<w>"
	case SlidingWindowScript:
		return ":<w−1>, <w>"
	}
	return ""
}

// count adds the i-th call's keys.
func (c *CallSlots) count(i int, keys []string) {
	if SameSlot(keys) {
		c.CallsInOneSlot++
	}
	if i == 0 {
		c.FirstKeys = keys
		c.FirstSlots = make([]int, len(keys))
		for j, k := range keys {
			c.FirstSlots[j] = Slot(k)
		}
	}
}
