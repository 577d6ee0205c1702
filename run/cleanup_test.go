package run

import (
	"strings"
	"testing"

	"github.com/rlsim/rlsim/scenario"
)

// The cleanup command a run prints when keys of a killed run are in its way names the
// scenario's server — host, port, database — and asks for the password without showing it.
func TestCleanupAdviceNamesTheServer(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want []string
	}{
		{"redis://10.1.2.3:6380/4", []string{"redis-cli -h 10.1.2.3 -p 6380 -n 4 --scan --pattern 'rlsim:cluster-shared:*' | xargs redis-cli -h 10.1.2.3 -p 6380 -n 4 unlink"}},
		{"redis://:hunter2@cache:7000/0", []string{"redis-cli -h cache -p 7000 --scan", "add -a PASSWORD to both redis-cli calls"}},
	} {
		sc := &scenario.Scenario{Name: "cluster-shared", Cluster: &scenario.ClusterSpec{Prefix: "rlsim:", RedisURL: tc.url}}
		got := cleanupAdvice(sc)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.url, got, w)
			}
		}
		if strings.Contains(got, "hunter2") {
			t.Errorf("%s: the password is printed: %q", tc.url, got)
		}
	}
}
