package store

import (
	"errors"
	"testing"
	"time"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/internal/testnet"
)

// A server that refuses connections gives a clear error at once.
func TestRedisRefusedIsClearAndQuick(t *testing.T) {
	addr := testnet.RefusedAddr(t) // nothing listens there, nor can
	start := time.Now()
	_, err := NewRedis("redis://" + addr)
	if err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	if d := time.Since(start); d > 2*DefaultTimeout {
		t.Fatalf("took %s to report %v", d, err)
	}
}

// A server that accepts and never answers times out within the store's DefaultTimeout.
func TestRedisStalledTimesOut(t *testing.T) {
	ln := testnet.Listen(t)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	start := time.Now()
	_, err := NewRedis("redis://" + ln.Addr().String())
	if err == nil || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable, got %v", err)
	}
	if d := time.Since(start); d > 2*DefaultTimeout {
		t.Fatalf("took %s to report %v", d, err)
	}
	t.Log(err)
}

func TestRedisBadURL(t *testing.T) {
	if _, err := NewRedis("http://nope"); err == nil {
		t.Fatal("want an error for a non-redis URL")
	}
}

func TestCheckPolicy(t *testing.T) {
	for _, tc := range []struct {
		p  algorithms.Policy
		ok bool
	}{
		{algorithms.Policy{Limit: 100, Window: time.Minute}, true},
		{algorithms.Policy{Limit: 100, Window: 500 * time.Nanosecond}, false},
		{algorithms.Policy{Limit: 2000, Window: time.Millisecond}, false},
		{algorithms.Policy{Limit: 20000, Window: time.Minute}, true},
		{algorithms.Policy{Limit: 10000000, Window: 24 * time.Hour}, false},
		{algorithms.Policy{Limit: 0, Window: time.Minute}, false},
	} {
		if err := CheckPolicy(tc.p); (err == nil) != tc.ok {
			t.Errorf("CheckPolicy(%v) = %v, want ok=%v", tc.p, err, tc.ok)
		}
	}
}
