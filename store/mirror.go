package store

import (
	"errors"
	"slices"
	"strings"
)

// ErrOOM is what a store answers a write with when it holds more than its maxmemory and
// may not evict (Redis's noeviction policy): "OOM command not allowed when used memory >
// 'maxmemory'". A script whose write command meets it fails there, having written
// nothing; a script that only reads runs.
var ErrOOM = errors.New("OOM command not allowed when used memory > 'maxmemory'")

// IsOOM reports whether err is a store's refusal to write for want of memory: ErrOOM, or
// a Redis server's OOM error reply.
func IsOOM(err error) bool {
	return err != nil && (errors.Is(err, ErrOOM) || strings.Contains(err.Error(), "OOM command not allowed"))
}

// Deleter is a face that can delete keys (DEL): what a store's eviction does.
type Deleter interface {
	Delete(keys ...string) error
}

var (
	_ Deleter = (*Model)(nil)
	_ Deleter = (*Redis)(nil)
)

// Delete removes keys, as DEL.
func (m *Model) Delete(keys ...string) error {
	for _, k := range keys {
		m.ks.del(k)
	}
	return nil
}

// Entry is what the model holds at one key, for a caller that accounts for the store's
// memory: its Redis type, its length (hash fields, sorted-set members), its numbers (a
// string's value; a bucket's s and t; a counter hash's c and e), and its expiry on the
// virtual clock (ns, 0 for none).
type Entry struct {
	Type     string
	Len      int
	Value, T int64
	ExpireAt int64
}

// Lookup returns the live entry at key; ok is false when there is none (or it expired).
func (m *Model) Lookup(key string) (e Entry, ok bool) {
	en := m.ks.lookup(key)
	if en == nil {
		return Entry{}, false
	}
	e.ExpireAt, e.Value, e.T = en.expireAt, en.value, en.t
	switch en.kind {
	case kindString:
		e.Type = "string"
	case kindBucket:
		e.Type, e.Len = "hash", 2
	case kindCounter:
		e.Type, e.Len = "hash", 1
		if en.t != 0 {
			e.Len = 2
		}
	case kindZset:
		e.Type, e.Len = "zset", len(en.zset)
	}
	return e, true
}

// Snapshot records the entries at keys and returns a function that puts them back as they
// were (deleting the keys that did not exist): the undo of a script that must not have
// written, on the model.
func (m *Model) Snapshot(keys ...string) (restore func()) {
	saved := make([]*entry, len(keys))
	for i, k := range keys {
		if e := m.ks.keys[k]; e != nil {
			c := *e
			c.zset = slices.Clone(e.zset)
			saved[i] = &c
		}
	}
	return func() {
		for i, k := range keys {
			if saved[i] == nil {
				delete(m.ks.keys, k)
			} else {
				m.ks.keys[k] = saved[i]
			}
		}
	}
}
