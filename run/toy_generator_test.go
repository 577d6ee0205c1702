package run

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// A generator is one file: this test file declares the toy section, its defaults, its
// validation and its source, and registers it. Nothing else in the project names it.
func init() {
	scenario.Register(scenario.GeneratorKind{Section: "toy", New: func() scenario.Generator { return new(toySpec) }, Plain: true})
}

// toySpec sends Count requests for Key, one every Every from Start.
type toySpec struct {
	Start scenario.Offset   `yaml:"start"`
	Every scenario.Duration `yaml:"every"`
	Count int               `yaml:"count"`
	Key   string            `yaml:"key"`
}

func (t *toySpec) Defaults() {
	if t.Every == 0 {
		t.Every = scenario.Duration(time.Second)
	}
}

func (t *toySpec) Validate(c *scenario.Check) error {
	if err := c.Count("count", t.Count); err != nil {
		return err
	}
	if t.Key == "" {
		return c.Fail("key", "is required")
	}
	return nil
}

func (t *toySpec) Last(epoch time.Time) time.Duration {
	return t.Start.Resolve(epoch) + time.Duration(t.Count-1)*time.Duration(t.Every)
}

func (t *toySpec) Sources(b *scenario.Build) []traffic.Source {
	return []traffic.Source{&toySource{at: b.At(t.Start), every: time.Duration(t.Every), left: t.Count, key: t.Key}}
}

type toySource struct {
	at, every time.Duration
	left      int
	key       string
}

func (s *toySource) Next(r *traffic.Request) bool {
	if s.left == 0 {
		return false
	}
	*r = traffic.Request{At: s.at, Key: s.key, Cost: 1}
	s.at += s.every
	s.left--
	return true
}

func (s *toySource) String() string { return "toy" }

func TestToyGeneratorRegistersFromOneFile(t *testing.T) {
	if !strings.Contains(strings.Join(scenario.Sections(), ","), "toy") {
		t.Fatalf("sections %v lack the toy", scenario.Sections())
	}
	sc, err := scenario.Parse("toy.yaml", []byte(`name: toy
policy: {limit: 3, window: 10s}
algorithms: [fixed-window, sliding-log]
traffic:
  - toy: {start: 2s, count: 5, key: toy-user}
`))
	if err != nil {
		t.Fatal(err)
	}
	// No duration: the run stops one window after the toy's last request (2s + 4×1s).
	if h := sc.Horizon(); h != 16*time.Second {
		t.Fatalf("horizon %s, want 16s", h)
	}
	if !plainKeys(sc) {
		t.Error("a plain generator keyed on user does not take the plain path")
	}
	var buf bytes.Buffer
	dw := NewDecisionWriter(csv.NewWriter(&buf))
	rep, err := Run(sc, Options{Decisions: dw})
	if err != nil {
		t.Fatal(err)
	}
	if err := dw.Flush(); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString("t_ns,key,cost,algorithm,allowed,reference_allowed,scenario\n")
	for _, alg := range []string{"fixed-window", "sliding-log"} {
		for i := range 5 {
			fmt.Fprintf(&want, "%d,toy-user,1,%s,%v,%v,toy\n", (2+i)*1e9, alg, i < 3, i < 3)
		}
	}
	if buf.String() != want.String() {
		t.Errorf("decisions\n%s\nwant\n%s", buf.String(), want.String())
	}
	for _, r := range rep.Results {
		if r.Requests != 5 || r.Admitted != 3 {
			t.Errorf("%s: %d requests, %d admitted; want 5 and 3", r.Algorithm, r.Requests, r.Admitted)
		}
	}
	// Its validation speaks with the file's position and the field's path.
	_, err = scenario.Parse("toy.yaml", []byte("policy: {limit: 3, window: 10s}\nduration: 1m\ntraffic:\n  - toy: {count: 0, key: k}\n"))
	if err == nil || err.Error() != "toy.yaml:4:18: traffic[0].toy.count: must be between 1 and 4194304, got 0" {
		t.Errorf("error %v", err)
	}
	_, err = scenario.Parse("toy.yaml", []byte("policy: {limit: 3, window: 10s}\nduration: 1m\ntraffic:\n  - toys: {count: 1, key: k}\n"))
	if err == nil || !strings.Contains(err.Error(), "traffic[0].toys: unknown field (known: cost-weighted, ip-rotation, ipv6-rotation, login-attack, nat-crowd, page-load, poisson, script, tenants, toy, xff-spoofing)") {
		t.Errorf("error %v", err)
	}
}
