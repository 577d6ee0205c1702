package cmd

import (
	"encoding/json"
	"testing"

	"github.com/rlsim/rlsim/algorithms"
)

// TestAlgorithmsListsTheCatalogue: rlsim algorithms names every registered kind in
// report order, the six as defaults, and each product with the parameters its spec takes.
func TestAlgorithmsListsTheCatalogue(t *testing.T) {
	out, errOut, code := rlsim(t, "algorithms", "--format", "json")
	if code != 0 {
		t.Fatal(errOut)
	}
	var got struct {
		Algorithms []algorithmEntry `json:"algorithms"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	kinds := algorithms.Kinds()
	if len(got.Algorithms) != len(kinds) {
		t.Fatalf("%d entries for %d kinds", len(got.Algorithms), len(kinds))
	}
	defaults := 0
	for i, e := range got.Algorithms {
		k := kinds[i]
		if e.Name != k.Name || e.Default != k.Default || len(e.Params) != len(k.Params) {
			t.Errorf("entry %d: %+v, want the kind %s", i, e, k.Name)
		}
		if e.Default {
			defaults++
		}
	}
	if defaults != 6 {
		t.Errorf("%d defaults, want the six", defaults)
	}
	for _, e := range got.Algorithms {
		if e.Name == "nginx" {
			names := map[string]bool{}
			for _, p := range e.Params {
				names[p.Name] = true
			}
			if !names["rate"] || !names["burst"] || !names["nodelay"] {
				t.Errorf("nginx's parameters: %+v", e.Params)
			}
			return
		}
	}
	t.Error("no nginx entry")
}
