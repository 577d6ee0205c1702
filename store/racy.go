package store

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadWriter is what a node that decides by itself needs from the store: plain commands,
// each one round trip and none a script, so another client's command can run between a
// read and the write that follows it — the read-decide-write race of the design notes
// (cluster's shared-racy placement). Both faces implement it, on the same keys and types
// as the atomic scripts: string counters, the bucket hash {t, s}.
type ReadWriter interface {
	Store
	// Get reads the string counters at keys in one MGET; a missing key reads 0.
	Get(keys ...string) ([]int64, error)
	// GetBucket reads the bucket hash at key (HMGET key t s); ok is false when it is missing.
	GetBucket(key string) (t, s int64, ok bool, err error)
	// IncrExpire adds n to the counter at key and gives it a TTL of ms milliseconds, as
	// one MULTI/EXEC (INCRBY, PEXPIRE): the write of a counter that always has a TTL.
	IncrExpire(key string, n, ms int64) (int64, error)
	// SetExpire sets the counter at key to v with a TTL of ms milliseconds (SET key v PX ms).
	SetExpire(key string, v, ms int64) error
	// SetBucket writes the bucket hash {t, s} at key and gives it a TTL of ms
	// milliseconds, as one MULTI/EXEC (HSET, PEXPIRE).
	SetBucket(key string, t, s, ms int64) error
}

var (
	_ ReadWriter = (*Model)(nil)
	_ ReadWriter = (*Redis)(nil)
)

// Get reads counters; a missing or expired key reads 0.
func (m *Model) Get(keys ...string) ([]int64, error) {
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = m.ks.get(k)
	}
	return out, nil
}

// GetBucket reads the bucket hash at key.
func (m *Model) GetBucket(key string) (t, s int64, ok bool, err error) {
	t, s, ok = m.ks.bucket(key)
	return t, s, ok, nil
}

// IncrExpire adds n to the counter at key and sets its TTL.
func (m *Model) IncrExpire(key string, n, ms int64) (int64, error) {
	v := m.ks.incrBy(key, n)
	m.ks.pexpire(key, max(ms, 1))
	return v, nil
}

// SetExpire sets the counter at key to v, with a TTL.
func (m *Model) SetExpire(key string, v, ms int64) error {
	m.ks.set(key, v)
	m.ks.pexpire(key, max(ms, 1))
	return nil
}

// SetBucket writes the bucket hash at key, with a TTL.
func (m *Model) SetBucket(key string, t, s, ms int64) error {
	m.ks.setBucket(key, t, s)
	m.ks.pexpire(key, max(ms, 1))
	return nil
}

// Get runs MGET; a missing key reads 0.
func (r *Redis) Get(keys ...string) ([]int64, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	r.singles.Add(1)
	vals, err := r.client.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, r.wrap(err)
	}
	out := make([]int64, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		if out[i], err = parseCounter(keys[i], v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetBucket runs HMGET key t s.
func (r *Redis) GetBucket(key string) (t, s int64, ok bool, err error) {
	ctx, cancel := r.ctx()
	defer cancel()
	r.singles.Add(1)
	vals, err := r.client.HMGet(ctx, key, "t", "s").Result()
	if err != nil {
		return 0, 0, false, r.wrap(err)
	}
	if vals[0] == nil || vals[1] == nil {
		return 0, 0, false, nil
	}
	if t, err = parseCounter(key+" t", vals[0]); err != nil {
		return 0, 0, false, err
	}
	if s, err = parseCounter(key+" s", vals[1]); err != nil {
		return 0, 0, false, err
	}
	return t, s, true, nil
}

// IncrExpire runs INCRBY and PEXPIRE in one MULTI/EXEC.
func (r *Redis) IncrExpire(key string, n, ms int64) (int64, error) {
	ctx, cancel := r.ctx()
	defer cancel()
	r.singles.Add(1)
	var incr *redis.IntCmd
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		incr = p.IncrBy(ctx, key, n)
		p.PExpire(ctx, key, r.gcTTL(ms))
		return nil
	})
	if err != nil {
		return 0, r.wrap(err)
	}
	return incr.Val(), nil
}

// SetExpire runs SET key v PX ms.
func (r *Redis) SetExpire(key string, v, ms int64) error {
	ctx, cancel := r.ctx()
	defer cancel()
	r.singles.Add(1)
	return r.wrap(r.client.Set(ctx, key, v, r.gcTTL(ms)).Err())
}

// SetBucket runs HSET key t T s S and PEXPIRE in one MULTI/EXEC.
func (r *Redis) SetBucket(key string, t, s, ms int64) error {
	ctx, cancel := r.ctx()
	defer cancel()
	r.singles.Add(1)
	_, err := r.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "t", t, "s", s)
		p.PExpire(ctx, key, r.gcTTL(ms))
		return nil
	})
	return r.wrap(err)
}

// gcTTL is the TTL of a key the racy placement writes: ms of virtual time, which is only
// garbage collection (decisions read the times stored with the data), and on a real
// server, whose TTLs count wall time, WallMargin more, as the scripts keep their keys.
func (r *Redis) gcTTL(ms int64) time.Duration {
	ttl := time.Duration(max(ms, 1)) * time.Millisecond
	if r.mini == nil {
		ttl += WallMargin
	}
	return ttl
}

// parseCounter reads an integer the server returned as a string.
func parseCounter(what string, v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%s: want an integer string, got %T", what, v)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return n, nil
}
