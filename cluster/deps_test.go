package cluster

import (
	"os/exec"
	"strings"
	"testing"
)

// The fleet decides; measuring and rendering are the report's. The decision path must not
// pull in the chart, table or HTML libraries.
func TestClusterDependsOnNothingThatRenders(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"gonum.org/", "github.com/olekukonko/tablewriter", "html/template", "github.com/rlsim/rlsim/report"} {
			if strings.HasPrefix(dep, banned) {
				t.Errorf("cluster depends on %s", dep)
			}
		}
	}
}
