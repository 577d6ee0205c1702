package run

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/traffic"
)

// The cluster example in docs/distributed.md parses and runs, so the docs cannot drift
// from the format.
func TestDistributedDocExample(t *testing.T) {
	data, err := os.ReadFile("../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block in docs/distributed.md")
	}
	sc, err := scenario.Parse("docs/distributed.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 3 || rep.Results[0].Distributed == nil || rep.Results[0].Alerts != 1 {
		t.Fatalf("want three fleet variants with an alert each, got %+v", rep.Results)
	}
}

// The clients example in docs/backoff.md, every policy's settings at its default,
// parses and gives the defaults it claims.
func TestBackoffDocExample(t *testing.T) {
	data, err := os.ReadFile("../docs/backoff.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no yaml block in docs/backoff.md")
	}
	sc, err := scenario.Parse("docs/backoff.md", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	got := sc.Clients.StrategyConfig()
	want := traffic.DefaultStrategyConfig(got.Base, got.Cap)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the example's settings differ from the defaults it shows:\n got %+v\nwant %+v", got, want)
	}
}
