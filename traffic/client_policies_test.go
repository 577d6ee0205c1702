package traffic

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/rlsim/rlsim/response"
	"github.com/rlsim/rlsim/sim"
)

// answering is a server whose answer is a function of the attempt; hops take 10 ms each
// way, and it records when attempts were sent.
type answering struct {
	answer func(a *Attempt) response.Response
	sent   []time.Duration
}

func (s *answering) Forward(now time.Duration, _ *Attempt) time.Duration {
	s.sent = append(s.sent, now)
	return 10 * ms
}

func (s *answering) Serve(_ time.Duration, a *Attempt) Reply {
	return Reply{Response: s.answer(a), Latency: 10 * ms}
}

func status(code int) response.Response {
	return response.Response{Status: code, Header: http.Header{}}
}

// failFirst fails every request's first try with a 503 and lets its retries through.
func failFirst(a *Attempt) response.Response {
	if a.Number == 1 {
		return status(503)
	}
	return status(200)
}

func runPop(t *testing.T, srv Server, retry Retry, processes int, jobs ...Job) ClientStats {
	t.Helper()
	if retry.Backoff == nil {
		retry.Backoff = NoBackoff{}
	}
	c := &Clients{Server: srv, Retry: retry, Epoch: testEpoch, RNG: rand.New(rand.NewPCG(1, 1)), Processes: processes}
	var loop sim.Loop
	for _, j := range jobs {
		c.Add(&loop, j)
	}
	loop.Run(math.MaxInt64)
	return c.Stats
}

// A quota with room for one retry is one per process: clients of one process share it,
// clients that are each their own process do not.
func TestClientsOfAProcessShareItsPolicies(t *testing.T) {
	quota := QuotaConfig{Capacity: 5, RetryCost: 5, TimeoutCost: 5}
	retry := Retry{Policies: []PolicyMaker{quota}}
	own := runPop(t, &answering{answer: failFirst}, retry, 0, Job{Requests: 1}, Job{Requests: 1})
	if own.Calls != 4 || own.Done != 2 || own.Withheld != 0 || own.Requests != 2 {
		t.Fatalf("a process each: %+v", own)
	}
	shared := runPop(t, &answering{answer: failFirst}, retry, 1, Job{Requests: 1}, Job{Requests: 1})
	if shared.Calls != 3 || shared.Done != 1 || shared.GiveUps != 1 || shared.Withheld != 1 || shared.Requests != 2 || shared.Succeeded != 1 {
		t.Fatalf("one process: %+v", shared)
	}
}

// An open breaker refuses first tries too: the request never reaches the server and the
// job is given up at once.
func TestClientBreakerRefusesFirstTries(t *testing.T) {
	srv := &answering{answer: func(*Attempt) response.Response { return status(503) }}
	breaker := BreakerConfig{Window: 2, FailureRatio: 1, OpenFor: 10 * time.Second, Probes: 1}
	st := runPop(t, srv, Retry{Policies: []PolicyMaker{breaker}, MaxAttempts: 1}, 1,
		Job{Requests: 1}, Job{Requests: 1}, Job{Start: time.Second, Requests: 1})
	if st.Calls != 2 || st.Requests != 3 || st.Withheld != 1 || st.GiveUps != 3 {
		t.Fatalf("%+v", st)
	}
	if st.ClientCompletion[2] != 0 {
		t.Fatalf("the refused client finished %s after its start, want at once", st.ClientCompletion[2])
	}
}

// After a throttle the adaptive bucket is on at its lowest rate (nothing measured yet:
// 0.5 a second), so the retry waits about 2 s for its token, looking again every 0.5 s.
func TestClientAdaptivePacesItsRetry(t *testing.T) {
	throttleFirst := func(a *Attempt) response.Response {
		if a.Number == 1 {
			return status(429)
		}
		return status(200)
	}
	plain := &answering{answer: throttleFirst}
	runPop(t, plain, Retry{}, 0, Job{Requests: 1})
	if plain.sent[1] != 20*ms {
		t.Fatalf("without a policy the retry leaves with the reply: %v", plain.sent)
	}
	paced := &answering{answer: throttleFirst}
	st := runPop(t, paced, Retry{Policies: []PolicyMaker{DefaultAdaptive}}, 0, Job{Requests: 1})
	// The bucket filled 0.02 of a token in the first 20 ms at its initial 1/s; the rest
	// takes 0.98/0.5 = 1.96 s.
	want := 20*ms + 1960*ms
	if st.Done != 1 || len(paced.sent) != 2 || paced.sent[1] < want || paced.sent[1] > want+ms {
		t.Fatalf("adaptive retry sent at %v, want %s: %+v", paced.sent, want, st)
	}
	// A deadline that ends inside the wait gives the job up.
	late := &answering{answer: throttleFirst}
	st = runPop(t, late, Retry{Policies: []PolicyMaker{DefaultAdaptive}, Deadline: time.Second}, 0, Job{Requests: 1})
	if st.GiveUps != 1 || len(late.sent) != 1 {
		t.Fatalf("deadline inside the pacing: %+v, sent %v", st, late.sent)
	}
}

// A naive client retries a 400 up to its attempt limit; every such retry is wrong.
func TestClientRetryAllErrorsCountsWrongRetries(t *testing.T) {
	bad := func(*Attempt) response.Response { return status(400) }
	st := runPop(t, &answering{answer: bad}, Retry{MaxAttempts: 3}, 0, Job{Requests: 1})
	if st.Calls != 1 || st.Failed != 1 || st.RetriedWrongly != 0 {
		t.Fatalf("a careful client: %+v", st)
	}
	st = runPop(t, &answering{answer: bad}, Retry{MaxAttempts: 3, RetryAllErrors: true}, 0, Job{Requests: 1})
	if st.Calls != 3 || st.Failed != 0 || st.GiveUps != 1 || st.RetriedWrongly != 2 {
		t.Fatalf("a naive client: %+v", st)
	}
}

// Retry-After-Ms is read before Retry-After: 15 ms, not the whole second.
func TestClientReadsRetryAfterMs(t *testing.T) {
	for _, tt := range []struct {
		ms   string
		want time.Duration
	}{{"15", 20*ms + 15*ms}, {"", 20*ms + time.Second}, {"soon", 20*ms + time.Second}} {
		srv := &answering{answer: func(a *Attempt) response.Response {
			if a.Number > 1 {
				return status(200)
			}
			r := status(429)
			r.Header.Set("Retry-After", "1")
			if tt.ms != "" {
				r.Header.Set(response.RetryAfterMsHeader, tt.ms)
			}
			return r
		}}
		st := runPop(t, srv, Retry{HonorRetryAfter: true}, 0, Job{Requests: 1})
		if srv.sent[1] != tt.want || st.HonouredRetries != 1 {
			t.Errorf("Retry-After-Ms %q: retry sent at %s, want %s", tt.ms, srv.sent[1], tt.want)
		}
	}
}

// Each client's time to finish runs from its own start, however its job ended; wasted
// calls are those without a success.
func TestClientCompletionPerClient(t *testing.T) {
	st := runPop(t, &answering{answer: failFirst}, Retry{}, 0,
		Job{Requests: 2}, Job{Start: time.Second, Requests: 1})
	// Job 0: two requests, each a failed try and a retry, 20 ms a round trip.
	if st.ClientCompletion[0] != 80*ms || st.ClientCompletion[1] != 40*ms || st.Completion != time.Second+40*ms {
		t.Fatalf("completion %v, last %s", st.ClientCompletion, st.Completion)
	}
	if st.Requests != 3 || st.Calls != 6 || st.Succeeded != 3 {
		t.Fatalf("%+v", st)
	}
}
