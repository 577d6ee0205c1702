package cluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/internal/redistest"
	"github.com/rlsim/rlsim/store"
)

// replicaPair is a store on two real servers, a primary and its replica (REPLICAOF), that
// fails over as a real deployment does: Lag before the failover the replica stops
// replicating (REPLICAOF NO ONE, once WAIT has seen it take every earlier write), so the
// primary's writes from then on never reach it; at the failover the fleet turns to the
// replica, which has become the primary.
type replicaPair struct {
	t                *testing.T
	primary, replica *store.Redis
	epoch            int64
	cutAt, promoteAt time.Duration
	cut, promoted    bool
	lostOnPrimary    int64 // writes the primary took after the cut
	target           *store.Redis
}

func (p *replicaPair) SetNow(now int64) error {
	elapsed := time.Duration(now - p.epoch)
	ctx := context.Background()
	if !p.cut && elapsed > p.cutAt {
		p.cut = true
		if n, err := p.primary.Client().Do(ctx, "WAIT", 1, 2000).Int64(); err != nil || n != 1 {
			p.t.Fatalf("WAIT: %d replicas caught up (%v)", n, err)
		}
		if err := p.replica.Client().Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			p.t.Fatal(err)
		}
	}
	if !p.promoted && elapsed >= p.promoteAt {
		p.promoted, p.target = true, p.replica
	}
	p.primary.SetNow(now)
	return p.replica.SetNow(now)
}

func (p *replicaPair) Eval(s *store.Script, keys []string, args ...int64) ([]int64, error) {
	v, err := p.target.Eval(s, keys, args...)
	if err == nil && p.cut && !p.promoted && wrote(s, v) {
		p.lostOnPrimary++
	}
	return v, err
}

func (p *replicaPair) Keys(prefix string) ([]store.KeyInfo, error) { return p.target.Keys(prefix) }
func (p *replicaPair) Name() string                                { return "redis" }
func (p *replicaPair) Close() error                                { return nil }

// A failover on a real REPLICAOF pair, done by the test — the replica cut off 2 s before
// the failover, promoted with REPLICAOF NO ONE at it — against the model's failover with a
// 2 s lag, on the same traffic: the same decisions, request for request, and as many
// writes lost as the primary took after the cut.
func TestFailoverMatchesARealReplicaPair(t *testing.T) {
	primaryURL, primaryPort := redistest.Start(t)
	replicaURL, _ := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(primaryPort))
	primary, err := store.NewRedis(primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	replica, err := store.NewRedis(replicaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		info, _ := replica.Client().Info(context.Background(), "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica never linked to its primary:\n%s", info)
		}
	}
	const at, lag = 65 * time.Second, 2 * time.Second
	run := func(c Config, st store.Store) (string, DesignFigures) {
		c.Nodes, c.Balancer, c.Placement, c.Epoch, c.Prefix = 5, "random", "shared", epoch, "fo:"
		f, err := New(c, "sliding-log", perMinute, st, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		rng := rand.New(rand.NewPCG(5, 6))
		for i := range 1800 {
			k := uint32(rng.IntN(3))
			f.SetName(k, fmt.Sprintf("user_%d", k))
			d := f.Allow(k, epoch+int64(i)*int64(100*time.Millisecond), 1)
			fmt.Fprintf(&b, "%t/%d ", d.Allowed, d.Remaining)
		}
		if _, err := f.Finish(); err != nil {
			t.Fatal(err)
		}
		return b.String(), f.Designs()
	}
	pair := &replicaPair{t: t, primary: primary, replica: replica, epoch: epoch, cutAt: at - lag, promoteAt: at, target: primary}
	real, _ := run(Config{}, pair)
	model, figures := run(Config{Failovers: []Failover{{At: at, Lag: lag}}}, store.NewModel())
	if real != model {
		t.Errorf("the real pair and the model decide differently:\n real  %.300s\n model %.300s", real, model)
	}
	if !pair.promoted || figures.LostWrites == 0 || figures.LostWrites != pair.lostOnPrimary {
		t.Errorf("model lost %d writes; the real primary took %d after the cut (promoted: %t)", figures.LostWrites, pair.lostOnPrimary, pair.promoted)
	}
	t.Logf("%d writes lost to the failover on both; %d free passes", figures.LostWrites, figures.FreePasses)
}
