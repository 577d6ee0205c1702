package report

import (
	"fmt"
	"time"
)

// Caption is the line every chart of r carries: where its data came from.
func Caption(r *Report) string {
	if c := BackendCapacity(r); c > 0 {
		return fmt.Sprintf("scenario %s · seed %d · a backend of %g requests/s, no limiter · %s",
			r.Scenario, r.Seed, c, r.Command())
	}
	return fmt.Sprintf("scenario %s · seed %d · policy %d per %s, burst %d · key %s · %s",
		r.Scenario, r.Seed, r.Policy.Limit, time.Duration(r.Policy.Window), r.Policy.Burst, r.Key, r.Command())
}

// WithNote adds a line to a caption, if there is one to add.
func WithNote(caption, note string) string {
	if note == "" {
		return caption
	}
	return caption + "\n" + note
}
