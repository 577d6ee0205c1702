package gateway

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Section is the part of a scenario file that puts one location's limits in a scenario:
// YAML to paste under a scenario's name, duration and traffic.
type Section struct {
	Location string
	YAML     string
}

// Scenarios writes a scenario section per location of r. A location with one limit runs
// its model: the policy it advertises (the promise its rows are judged against), its
// spec as the algorithm, its key. A location where several limits must all admit is
// written as layered limits, one layer per limit at the promise it advertises, which the
// built-in algorithms run; the models of the layers are named in a comment, since a
// scenario's algorithms run in every layer alike.
func (r *Result) Scenarios() []Section {
	var out []Section
	for _, g := range r.Groups() {
		var b strings.Builder
		var at []string
		for _, f := range g.Found {
			at = append(at, f.At.String())
		}
		if !g.Layered() {
			f := g.Found[0]
			fmt.Fprintf(&b, "# %s (%s)\n", g.Location, f.At)
			fmt.Fprintf(&b, "policy: {limit: %d, window: %s}\n", f.Promise.Limit, formatDuration(f.Promise.Window))
			fmt.Fprintf(&b, "algorithms: [%s]\n", yamlQuote(f.Spec()))
			if f.Key != "" {
				fmt.Fprintf(&b, "key: %s\n", f.Key)
			} else {
				fmt.Fprintf(&b, "# key: rlsim has none for %s; the scenario's own key applies\n", f.KeySource)
			}
			out = append(out, Section{Location: g.Location, YAML: b.String()})
			continue
		}
		fmt.Fprintf(&b, "# %s: every limit must admit (%s).\n", g.Location, strings.Join(at, ", "))
		b.WriteString("# Each layer runs the algorithms at its limit's promise; the models, one per layer:\n")
		names := layerNames(g.Found)
		width := 0
		for _, n := range names {
			width = max(width, len(n))
		}
		for i, f := range g.Found {
			fmt.Fprintf(&b, "#   %-*s  %s\n", width, names[i], f.Spec())
		}
		b.WriteString("limits:\n")
		for i, f := range g.Found {
			burst := ""
			if f.Promise.Burst > 0 {
				burst = ", burst: " + strconv.FormatInt(f.Promise.Burst, 10)
			}
			layer := fmt.Sprintf("{name: %s, key: %s, limit: %d, window: %s%s}", yamlQuote(names[i]), f.Key, f.Promise.Limit, formatDuration(f.Promise.Window), burst)
			if f.Key == "" {
				layer = fmt.Sprintf("# - {name: %s, limit: %d, window: %s%s}  # no rlsim key for %s", yamlQuote(names[i]), f.Promise.Limit, formatDuration(f.Promise.Window), burst, f.KeySource)
			} else {
				layer = "- " + layer
			}
			b.WriteString("  " + layer + "\n")
		}
		out = append(out, Section{Location: g.Location, YAML: b.String()})
	}
	return out
}

// layerNames names each limit's layer after the limit, made unique in the location.
func layerNames(found []Found) []string {
	names := make([]string, len(found))
	seen := map[string]int{}
	for i, f := range found {
		n := f.Name
		if n == "" {
			n = f.Product
		}
		seen[n]++
		if seen[n] > 1 {
			n += "-" + strconv.Itoa(seen[n])
		}
		names[i] = n
	}
	return names
}

var yamlPlainRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]*$`)

// yamlQuote writes s as a YAML flow scalar: plain when it can be, else single-quoted.
func yamlQuote(s string) string {
	if yamlPlainRE.MatchString(s) && !strings.Contains(s, ": ") {
		switch strings.ToLower(s) {
		case "true", "false", "null", "yes", "no", "on", "off", "~":
		default:
			if _, err := strconv.ParseFloat(s, 64); err != nil {
				return s
			}
		}
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
