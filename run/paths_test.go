package run

import (
	"encoding/json"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// TestPlainPathEqualsEnginePath runs every plain built-in scenario down both paths and
// requires the same results, so the fast path cannot drift from the general one.
func TestPlainPathEqualsEnginePath(t *testing.T) {
	plain := 0
	for _, name := range scenario.Builtins() {
		sc, err := scenario.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		if !plainKeys(sc) || sc.Heavy {
			continue
		}
		plain++
		t.Run(name, func(t *testing.T) {
			fast := mustRunJSON(t, sc)
			forceEngine = true
			defer func() { forceEngine = false }()
			slow := mustRunJSON(t, sc)
			if fast != slow {
				t.Fatalf("plain path and engine path differ:\nplain  %s\nengine %s", fast, slow)
			}
		})
	}
	if plain < 4 {
		t.Fatalf("only %d plain built-in scenarios: the comparison covers too little", plain)
	}
}

func mustRunJSON(t *testing.T, sc *scenario.Scenario) string {
	t.Helper()
	rep, err := Run(sc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rep.Results {
		tl := rep.Results[i].Timeline
		rep.Results[i].Timeline = nil
		b, _ := json.Marshal(tl)
		rep.Description += string(b) // the timeline is not in the JSON; compare it too
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
