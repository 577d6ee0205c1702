package store

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// scanCount is how many keys one SCAN step asks the server to look at, and about how many
// names one pipeline of a listing, an audit or a cleanup carries. Each step and each
// pipeline is one round trip with its own deadline (Options.Timeout), so a million keys take a
// thousand short round trips, never one long one.
const scanCount = 1000

// scan calls fn with the names under prefix, about scanCount at a time, walking the
// keyspace with SCAN MATCH (never KEYS, which blocks the server). A name can come twice
// when the server resizes its table meanwhile; fn must not mind.
func (r *Redis) scan(prefix string, fn func(names []string) error) error {
	r.syncTTLs()
	match := escapeGlob(prefix) + "*"
	var cursor uint64
	var batch []string
	for {
		ctx, cancel := r.ctx()
		names, next, err := r.client.Scan(ctx, cursor, match, scanCount).Result()
		cancel()
		if err != nil {
			return r.wrap(fmt.Errorf("SCAN MATCH %s: %w", match, err))
		}
		batch = append(batch, names...)
		if len(batch) >= scanCount || next == 0 && len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// keyInfos reads the named keys in two pipelines: TYPE and PTTL, then what KeyInfo
// holds for the type (GET; HLEN and HMGET of the counter fields c and e; ZCARD). Keys gone
// since SCAN named them are left out.
func (r *Redis) keyInfos(names []string) ([]KeyInfo, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	pipe := r.client.Pipeline()
	types := make([]*redis.StatusCmd, len(names))
	ttls := make([]*redis.DurationCmd, len(names))
	for i, n := range names {
		types[i] = pipe.Type(ctx, n)
		ttls[i] = pipe.PTTL(ctx, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, r.wrap(fmt.Errorf("TYPE and PTTL of %d keys (%s ...): %w", len(names), names[0], err))
	}
	out := make([]KeyInfo, 0, len(names))
	for i, n := range names {
		if typ := types[i].Val(); typ != "none" { // "none": expired or deleted since SCAN
			out = append(out, KeyInfo{Name: n, Type: typ, TTL: ttlOf(ttls[i].Val())})
		}
	}
	if len(out) == 0 {
		return out, nil
	}
	ctx2, cancel2 := r.ctx()
	defer cancel2()
	pipe = r.client.Pipeline()
	values := make([]*redis.StringCmd, len(out))
	lengths := make([]*redis.IntCmd, len(out))
	fields := make([]*redis.SliceCmd, len(out))
	for i, k := range out {
		switch k.Type {
		case "string":
			values[i] = pipe.Get(ctx2, k.Name)
		case "hash":
			lengths[i] = pipe.HLen(ctx2, k.Name)
			fields[i] = pipe.HMGet(ctx2, k.Name, "c", "e")
		case "zset":
			lengths[i] = pipe.ZCard(ctx2, k.Name)
		}
	}
	if _, err := pipe.Exec(ctx2); err != nil && !isReply(err) {
		return nil, r.wrap(fmt.Errorf("GET, HLEN, HMGET and ZCARD of %d keys (%s ...): %w", len(out), out[0].Name, err))
	}
	for i := range out {
		if values[i] != nil {
			// A GCRA's tat may carry its fraction of a ns after a colon: Value is its ns.
			whole, _, _ := strings.Cut(values[i].Val(), ":")
			out[i].Value, _ = strconv.ParseInt(whole, 10, 64)
		}
		if lengths[i] != nil {
			out[i].Len = int(lengths[i].Val())
		}
		if fields[i] != nil {
			counterFields(&out[i], fields[i])
		}
	}
	return out, nil
}

// ttlOf is PTTL's reply as KeyInfo.TTL: NoTTL for a key without one.
func ttlOf(d time.Duration) time.Duration {
	if d < 0 {
		return NoTTL
	}
	return d
}

// counterFields fills in a key's counter fields from HMGET c e: a hash with a count c is
// a counter of the non-atomic pattern, and e its virtual expiry once that was set. Any
// other key (an error reply: not a hash) is none.
func counterFields(k *KeyInfo, cmd *redis.SliceCmd) {
	v, err := cmd.Result()
	if err != nil || len(v) != 2 {
		return
	}
	if c, ok := v[0].(string); ok {
		k.Counter = true
		k.Value, _ = strconv.ParseInt(c, 10, 64)
	}
	if e, ok := v[1].(string); ok {
		k.Expiry, _ = strconv.ParseInt(e, 10, 64)
	}
}

// undying reads the named keys as an audit needs them: PTTL of every key in one
// pipeline, then HMGET of the counter fields of the keys that have no TTL in a second.
// It returns only those keys (TTL NoTTL, Type left empty): a key with a TTL goes in its
// time, whatever it holds.
func (r *Redis) undying(names []string) ([]KeyInfo, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	pipe := r.client.Pipeline()
	ttls := make([]*redis.DurationCmd, len(names))
	for i, n := range names {
		ttls[i] = pipe.PTTL(ctx, n)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, r.wrap(fmt.Errorf("PTTL of %d keys (%s ...): %w", len(names), names[0], err))
	}
	var out []KeyInfo
	for i, n := range names {
		if ttls[i].Val() == -1 { // -2: gone since SCAN
			out = append(out, KeyInfo{Name: n, TTL: NoTTL})
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	ctx2, cancel2 := r.ctx()
	defer cancel2()
	pipe = r.client.Pipeline()
	fields := make([]*redis.SliceCmd, len(out))
	for i, k := range out {
		fields[i] = pipe.HMGet(ctx2, k.Name, "c", "e") // WRONGTYPE for a key that is no hash
	}
	if _, err := pipe.Exec(ctx2); err != nil && !isReply(err) {
		return nil, r.wrap(fmt.Errorf("HMGET of %d keys without a TTL (%s ...): %w", len(out), out[0].Name, err))
	}
	for i := range out {
		counterFields(&out[i], fields[i])
	}
	return out, nil
}

// isReply reports whether err is an error reply of the server (WRONGTYPE, a script's
// error) rather than a failure of the connection.
func isReply(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// Keys lists the keys under prefix in name order, read a batch at a time (see scan and
// keyInfos): meant for tests and small prefixes, as it holds the whole list.
func (r *Redis) Keys(prefix string) ([]KeyInfo, error) {
	var out []KeyInfo
	err := r.scan(prefix, func(names []string) error {
		infos, err := r.keyInfos(names)
		out = append(out, infos...)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b KeyInfo) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(out, func(a, b KeyInfo) bool { return a.Name == b.Name }), nil
}

// eachUndying calls fn with the keys under prefix that have no TTL, a batch at a time,
// as undying reads them; a key may come twice.
func (r *Redis) eachUndying(prefix string, fn func([]KeyInfo) error) error {
	return r.scan(prefix, func(names []string) error {
		infos, err := r.undying(names)
		if err != nil {
			return err
		}
		return fn(infos)
	})
}

// FirstKey returns the name of a key under prefix, or "" when there is none.
func (r *Redis) FirstKey(prefix string) (string, error) {
	var first string
	errFound := errors.New("found")
	err := r.scan(prefix, func(names []string) error {
		first = names[0]
		return errFound
	})
	if err != nil && err != errFound {
		return "", err
	}
	return first, nil
}

// DeleteUnder removes every key under prefix and returns how many it removed: SCAN
// step by step, each step's names with one UNLINK, which frees their memory off the
// server's main thread. Callers name only a prefix that is theirs alone.
func (r *Redis) DeleteUnder(prefix string) (int64, error) {
	var deleted int64
	err := r.scan(prefix, func(names []string) error {
		ctx, cancel := r.ctx()
		defer cancel()
		n, err := r.client.Unlink(ctx, names...).Result()
		if err != nil {
			return r.wrap(fmt.Errorf("UNLINK of %d keys under %q: %w", len(names), prefix, err))
		}
		deleted += n
		return nil
	})
	return deleted, err
}

// Delete removes the named keys (callers pass only keys they wrote) with DEL, not
// UNLINK, so the memory is back before the next measurement reads used_memory; each DEL
// of up to scanCount keys has its own deadline.
func (r *Redis) Delete(keys ...string) error {
	_, err := r.deleteKeys(keys)
	return err
}

// deleteKeys is Delete, and how many of keys may be left when it failed: those of the DEL
// that failed (it may have run) and of the ones after it.
func (r *Redis) deleteKeys(keys []string) (left int, err error) {
	for len(keys) > 0 {
		n := min(len(keys), scanCount)
		ctx, cancel := r.ctx()
		err := r.client.Del(ctx, keys[:n]...).Err()
		cancel()
		if err != nil {
			return len(keys), r.wrap(fmt.Errorf("DEL of %d keys (%s ...): %w", n, keys[0], err))
		}
		keys = keys[n:]
	}
	return 0, nil
}

// LeftError is the error of a measurement that stopped (Err) and then could not delete
// every key it wrote: Left of them, under Prefix, may still be on the server.
type LeftError struct {
	Err       error
	Left      int
	Prefix    string
	DeleteErr error
}

func (e *LeftError) Error() string {
	return fmt.Sprintf("%v; up to %d keys it wrote under %q are left on the server (deleting them: %v)", e.Err, e.Left, e.Prefix, e.DeleteErr)
}

func (e *LeftError) Unwrap() error { return e.Err }

// memoryUsage sums MEMORY USAGE of the named keys, in pipelines of scanCount (a real
// server only: miniredis has no such command).
func (r *Redis) memoryUsage(names []string) (int64, error) {
	var total int64
	for len(names) > 0 {
		n := min(len(names), scanCount)
		ctx, cancel := r.ctx()
		pipe := r.client.Pipeline()
		cmds := make([]*redis.IntCmd, n)
		for i, k := range names[:n] {
			cmds[i] = pipe.MemoryUsage(ctx, k, 0)
		}
		_, err := pipe.Exec(ctx)
		cancel()
		if err != nil && !errors.Is(err, redis.Nil) {
			return 0, r.wrap(fmt.Errorf("MEMORY USAGE of %d keys (%s ...): %w", n, names[0], err))
		}
		for _, c := range cmds {
			total += c.Val() // 0 for a key gone meanwhile
		}
		names = names[n:]
	}
	return total, nil
}

// escapeGlob quotes the glob characters of a SCAN MATCH pattern.
func escapeGlob(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
