package gateway

import "fmt"

// Snippet writes the configuration of a gateway that enforces spec keyed on key.
func Snippet(spec, key string) (string, error) {
	return "", fmt.Errorf("no snippet writer for %q", spec)
}
