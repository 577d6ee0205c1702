package traffic

import (
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/sim"
)

var testEpoch = time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)

// scripted answers each attempt with the next status of its script (the last one
// repeating): the attempt takes hop to arrive and its reply latency to come back. It
// records when attempts were sent and when they arrived.
type scripted struct {
	statuses   []int
	retryAfter func(now time.Duration) string
	hop        time.Duration
	latency    time.Duration
	sent       []time.Duration
	arrived    []time.Duration
	attempts   []Attempt
}

func (s *scripted) Forward(now time.Duration, a *Attempt) time.Duration {
	s.sent = append(s.sent, now)
	return s.hop
}

func (s *scripted) Serve(now time.Duration, a *Attempt) Reply {
	s.arrived = append(s.arrived, now)
	s.attempts = append(s.attempts, *a)
	st := s.statuses[min(len(s.arrived), len(s.statuses))-1]
	r := response.Response{Status: st, Header: http.Header{}}
	if s.retryAfter != nil && st != 200 {
		if v := s.retryAfter(now); v != "" {
			r.Header.Set("Retry-After", v)
		}
	}
	return Reply{Response: r, Latency: s.latency}
}

func runClients(t *testing.T, srv Server, retry Retry, jobs ...Job) ClientStats {
	t.Helper()
	if retry.Backoff == nil {
		retry.Backoff = ConstantBackoff{Sleep: 100 * time.Millisecond}
	}
	c := &Clients{Server: srv, Retry: retry, Epoch: testEpoch, RNG: rand.New(rand.NewPCG(1, 1))}
	var loop sim.Loop
	for _, j := range jobs {
		c.Add(&loop, j)
	}
	loop.Run(math.MaxInt64)
	return c.Stats
}

func TestClientRetries429And5xxUntilSuccess(t *testing.T) {
	srv := &scripted{statuses: []int{429, 503, 500, 200}, latency: 10 * time.Millisecond}
	st := runClients(t, srv, Retry{}, Job{Requests: 1})
	if st.Calls != 4 || st.Done != 1 || st.GiveUps != 0 || st.Failed != 0 {
		t.Fatalf("%+v", st)
	}
	// Each try: 10 ms to the reply, then the constant 100 ms sleep.
	want := []time.Duration{0, 110 * time.Millisecond, 220 * time.Millisecond, 330 * time.Millisecond}
	for i, at := range srv.sent {
		if at != want[i] {
			t.Errorf("attempt %d sent at %s, want %s", i+1, at, want[i])
		}
		if srv.attempts[i].Number != i+1 {
			t.Errorf("attempt %d numbered %d", i+1, srv.attempts[i].Number)
		}
	}
	if st.Completion != 340*time.Millisecond {
		t.Errorf("finished at %s, want 340ms", st.Completion)
	}
}

func TestClientDoesNotRetryOther4xx(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 409, 422} {
		srv := &scripted{statuses: []int{status, 200}, latency: time.Millisecond}
		st := runClients(t, srv, Retry{}, Job{Requests: 3})
		if st.Calls != 1 || st.Failed != 1 || st.Done != 0 {
			t.Errorf("status %d: %+v", status, st)
		}
	}
}

func TestClientStopsAtMaxAttempts(t *testing.T) {
	srv := &scripted{statuses: []int{503}, latency: time.Millisecond}
	st := runClients(t, srv, Retry{MaxAttempts: 4}, Job{Requests: 1}, Job{Requests: 1})
	if st.Calls != 8 || st.GiveUps != 2 || st.Done != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestClientStopsAtDeadline(t *testing.T) {
	srv := &scripted{statuses: []int{503}, latency: 10 * time.Millisecond}
	st := runClients(t, srv, Retry{Deadline: time.Second}, Job{Start: 5 * time.Second, Requests: 1})
	// Tries at 5.00, 5.11, ..., each ends 10 ms later; a sleep may not end past 6 s.
	if st.GiveUps != 1 || st.Completion > 6*time.Second || st.Completion < 5900*time.Millisecond {
		t.Fatalf("%+v", st)
	}
	last := srv.sent[len(srv.sent)-1]
	if last >= 6*time.Second {
		t.Fatalf("an attempt was sent at %s, past the deadline", last)
	}
}

func TestClientHonoursRetryAfterInBothForms(t *testing.T) {
	forms := map[string]func(now time.Duration) string{
		"seconds": func(time.Duration) string { return "3" },
		"date": func(now time.Duration) string {
			r := response.Response{Header: http.Header{"Retry-After": {"3"}}}
			r.RetryAfterDate(testEpoch.Add(now))
			return r.Header.Get("Retry-After")
		},
	}
	for name, form := range forms {
		t.Run(name, func(t *testing.T) {
			srv := &scripted{statuses: []int{429, 200}, latency: 20 * time.Millisecond, retryAfter: form}
			st := runClients(t, srv, Retry{HonorRetryAfter: true}, Job{Start: 250 * time.Millisecond, Requests: 1})
			// The 429 reaches the client at 270 ms; it waits max(100 ms, Retry-After).
			// Seconds: 3 s from then. Date: the server rounds 0.25 s + 3 s up to 4 s on
			// its clock, 3.73 s after the client reads it.
			want := 270*time.Millisecond + 3*time.Second
			if name == "date" {
				want = 4 * time.Second
			}
			if len(srv.sent) != 2 || srv.sent[1] != want {
				t.Fatalf("retried at %v, want %s", srv.sent, want)
			}
			if st.HonouredRetries != 1 || st.HonouredRefused != 0 {
				t.Fatalf("%+v", st)
			}
		})
	}
	t.Run("ignored", func(t *testing.T) {
		srv := &scripted{statuses: []int{429, 200}, latency: 20 * time.Millisecond, retryAfter: forms["seconds"]}
		runClients(t, srv, Retry{}, Job{Requests: 1})
		if srv.sent[1] != 120*time.Millisecond {
			t.Fatalf("retried at %s, want the backoff's 120ms", srv.sent[1])
		}
	})
	t.Run("backoff longer", func(t *testing.T) {
		srv := &scripted{statuses: []int{503, 200}, latency: 20 * time.Millisecond, retryAfter: func(time.Duration) string { return "1" }}
		st := runClients(t, srv, Retry{HonorRetryAfter: true, Backoff: ConstantBackoff{Sleep: 5 * time.Second}}, Job{Requests: 1})
		if srv.sent[1] != 5020*time.Millisecond || st.HonouredRetries != 0 {
			t.Fatalf("retried at %s (%+v), want after the 5 s backoff", srv.sent[1], st)
		}
	})
	t.Run("garbage", func(t *testing.T) {
		srv := &scripted{statuses: []int{429, 200}, latency: 20 * time.Millisecond, retryAfter: func(time.Duration) string { return "soon" }}
		runClients(t, srv, Retry{HonorRetryAfter: true}, Job{Requests: 1})
		if srv.sent[1] != 120*time.Millisecond {
			t.Fatalf("retried at %s, want the backoff's 120ms", srv.sent[1])
		}
	})
}

func TestClientTimeoutRetriesAndKeysStayTheSame(t *testing.T) {
	srv := &scripted{statuses: []int{200}, latency: 2 * time.Second}
	fast := &scripted{statuses: []int{200}, latency: time.Millisecond}
	// A slow server: every attempt times out; two attempts allowed.
	st := runClients(t, srv, Retry{Timeout: time.Second, MaxAttempts: 2, IdempotencyKeys: true}, Job{Requests: 1, NonIdempotent: true})
	if st.TimedOut != 2 || st.GiveUps != 1 || st.Calls != 2 {
		t.Fatalf("%+v", st)
	}
	if k := srv.attempts[0].IdempotencyKey; k == 0 || srv.attempts[1].IdempotencyKey != k || !srv.attempts[0].NonIdempotent {
		t.Fatalf("attempts %+v: want one non-zero key on both tries", srv.attempts)
	}
	runClients(t, fast, Retry{IdempotencyKeys: true}, Job{Requests: 3}, Job{Requests: 3})
	seen := map[uint64]bool{}
	for _, a := range fast.attempts {
		if seen[a.IdempotencyKey] {
			t.Fatalf("key %d reused across requests", a.IdempotencyKey)
		}
		seen[a.IdempotencyKey] = true
	}
	if len(seen) != 6 {
		t.Fatalf("%d keys for 6 requests", len(seen))
	}
}

func TestClientArrivalsSeparateRetries(t *testing.T) {
	srv := &scripted{statuses: []int{503, 503, 200}, latency: 5 * time.Millisecond}
	st := runClients(t, srv, Retry{}, Job{Requests: 1}, Job{Requests: 1})
	// Two first tries at 0 (bin 0); then the two clients alternate on the script's 503 and
	// 200 as the server's shared script runs on.
	if st.Arrivals[0] != 2 || (len(st.Retries) > 0 && st.Retries[0] != 0) {
		t.Fatalf("arrivals %v retries %v", st.Arrivals, st.Retries)
	}
	var total, retries int64
	for _, v := range st.Arrivals {
		total += v
	}
	for _, v := range st.Retries {
		retries += v
	}
	if total != st.Calls || retries != st.Calls-2 {
		t.Fatalf("arrivals %d retries %d calls %d", total, retries, st.Calls)
	}
}

// hopping gives every attempt its own forward hop, drawn from rng, and records what it
// served in the order it served it.
type hopping struct {
	rng      *rand.Rand
	maxHop   time.Duration
	arrivals []time.Duration
	due      map[[3]int]time.Duration // send time + hop per (client, request, try)
	served   int
}

func (h *hopping) Forward(now time.Duration, a *Attempt) time.Duration {
	hop := time.Duration(h.rng.Int64N(int64(h.maxHop)))
	h.due[[3]int{a.Client, a.Request, a.Number}] = now + hop
	return hop
}

func (h *hopping) Serve(now time.Duration, a *Attempt) Reply {
	h.arrivals = append(h.arrivals, now)
	h.served++
	status := http.StatusOK
	if h.served%3 != 0 {
		status = http.StatusTooManyRequests
	}
	return Reply{Response: response.Response{Status: status, Header: http.Header{}}, Latency: 5 * time.Millisecond}
}

// Hops far longer than the gaps between sends reorder attempts on the wire; the server
// must still see each one at its own arrival time (send + hop), in arrival order.
func TestClientsDeliverAttemptsInArrivalOrder(t *testing.T) {
	srv := &hopping{rng: rand.New(rand.NewPCG(7, 7)), maxHop: 80 * time.Millisecond, due: map[[3]int]time.Duration{}}
	var jobs []Job
	for i := range 50 {
		jobs = append(jobs, Job{Start: time.Duration(i) * time.Millisecond, Requests: 3})
	}
	jitter, err := NewBackoff("full-jitter", 10*time.Millisecond, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	retry := Retry{Backoff: jitter}
	st := runClients(t, srv, retry, jobs...)
	if st.Done != 50 || int64(len(srv.arrivals)) != st.Calls {
		t.Fatalf("%+v, %d served", st, len(srv.arrivals))
	}
	for i := 1; i < len(srv.arrivals); i++ {
		if srv.arrivals[i] < srv.arrivals[i-1] {
			t.Fatalf("served at %s after %s: not in arrival order", srv.arrivals[i], srv.arrivals[i-1])
		}
	}
	// Every attempt was served at send + hop: compare the multiset of due times with the
	// arrivals, both sorted.
	var due []time.Duration
	for _, d := range srv.due {
		due = append(due, d)
	}
	slices.Sort(due)
	if len(due) != len(srv.arrivals) {
		t.Fatalf("%d attempts sent, %d served", len(due), len(srv.arrivals))
	}
	for i := range due {
		if due[i] != srv.arrivals[i] {
			t.Fatalf("arrival %d served at %s, want send + hop = %s", i, srv.arrivals[i], due[i])
		}
	}
	// The test means something only if sending order and arrival order differ.
	reordered := false
	for c := 1; c < 50 && !reordered; c++ {
		reordered = srv.due[[3]int{c, 0, 1}] < srv.due[[3]int{c - 1, 0, 1}]
	}
	if !reordered {
		t.Fatal("no two first tries crossed on the wire; the test proves nothing")
	}
	// Arrivals are binned when they reach the server, not when they leave.
	var binned int64
	for i, v := range st.Arrivals {
		var want int64
		for _, a := range srv.arrivals {
			if int(a/(10*time.Millisecond)) == i {
				want++
			}
		}
		if v != want {
			t.Fatalf("bin %d holds %d arrivals, want %d", i, v, want)
		}
		binned += v
	}
	if binned != st.Calls {
		t.Fatalf("%d binned, %d calls", binned, st.Calls)
	}
}

// A client that times out retries, but the attempt it gave up on is still on its way:
// the server receives and carries out both.
func TestClientTimeoutLeavesTheAttemptInFlight(t *testing.T) {
	srv := &scripted{statuses: []int{200}, hop: 1500 * time.Millisecond, latency: 10 * time.Millisecond}
	st := runClients(t, srv, Retry{Timeout: time.Second, MaxAttempts: 2}, Job{Requests: 1})
	// Sent at 0 and, after the 1 s timeout and the 100 ms sleep, at 1.1 s; given up at 2.1 s.
	want := []time.Duration{1500 * time.Millisecond, 2600 * time.Millisecond}
	if !slices.Equal(srv.arrived, want) {
		t.Fatalf("served at %v, want %v", srv.arrived, want)
	}
	if st.TimedOut != 2 || st.GiveUps != 1 || st.Done != 0 || st.Completion != 2100*time.Millisecond {
		t.Fatalf("%+v", st)
	}
}

// The client stops waiting at send + Timeout: a reply due at that very instant is late.
func TestClientTimeoutEdge(t *testing.T) {
	for _, tt := range []struct {
		latency  time.Duration
		timedOut int64
	}{{499 * time.Millisecond, 0}, {500 * time.Millisecond, 1}} {
		srv := &scripted{statuses: []int{200}, hop: 500 * time.Millisecond, latency: tt.latency}
		st := runClients(t, srv, Retry{Timeout: time.Second, MaxAttempts: 1}, Job{Requests: 1})
		if st.TimedOut != tt.timedOut || st.Done != 1-tt.timedOut || st.GiveUps != tt.timedOut {
			t.Errorf("reply after %s: %+v", 500*time.Millisecond+tt.latency, st)
		}
	}
}
