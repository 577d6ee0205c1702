package report

import "strings"

// KeyRun is a scenario's traffic run again under another key, as its compare_keys ask.
type KeyRun struct {
	Key     string
	Results []Result
}

// OwnKeyLabel shortens a layered report's key ("account=account+ip=ip") to its layer
// names ("account+ip"); a single key is left as it is.
func OwnKeyLabel(key string) string {
	if !strings.Contains(key, "=") {
		return key
	}
	var names []string
	for _, layer := range strings.Split(key, "+") {
		name, _, _ := strings.Cut(layer, "=")
		names = append(names, name)
	}
	return strings.Join(names, "+")
}
