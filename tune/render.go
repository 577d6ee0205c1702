package tune

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Report is a search's output value, rendered as a table, JSON, CSV or Markdown.
type Report struct {
	Sample    string `json:"sample"`
	Requests  int    `json:"requests"`
	Labelled  bool   `json:"labelled"`
	HeldBytes int64  `json:"held_bytes"`
	Goals     []Goal `json:"goals"`
	Space     struct {
		Algorithms []string `json:"algorithms"`
		Keys       []string `json:"keys"`
		Windows    []string `json:"windows"`
		Limits     string   `json:"limits"`
		Bursts     string   `json:"bursts"`
	} `json:"space"`
	Evaluated   int          `json:"evaluated"`
	Probes      int          `json:"probes"`
	Recommended *PointReport `json:"recommended"`
	// Closest is the point missing the goals least, when none meets them.
	Closest   *PointReport  `json:"closest,omitempty"`
	Verified  *Verification `json:"verified,omitempty"`
	RunnersUp []PointReport `json:"runners_up"`
	Costs     []CostReport  `json:"costs"`
	Front     []PointReport `json:"front"`
	// For and Snippet are the gateway named with --for and its configuration.
	For     string `json:"for,omitempty"`
	Snippet string `json:"snippet,omitempty"`
	// Served is --verify's check of a server running the recommendation.
	Served *Served `json:"served,omitempty"`
}

// PointReport is a point with the names of a run's JSON.
type PointReport struct {
	Algorithm          string   `json:"algorithm"`
	Spec               string   `json:"spec"`
	Key                string   `json:"key"`
	Limit              int64    `json:"limit"`
	Window             string   `json:"window"`
	Burst              int64    `json:"burst"`
	Requests           int64    `json:"requests"`
	Admitted           int64    `json:"admitted"`
	Rejected           int64    `json:"rejected"`
	LegitRejectRate    *float64 `json:"legit_reject_rate"`
	AttackerAdmitRate  *float64 `json:"attacker_admit_rate"`
	BackendPeak        int64    `json:"backend_peak"`
	PeakWindowAdmitted int64    `json:"peak_window_admitted"`
	OverAdmission      float64  `json:"over_admission"`
	FalseReject        int64    `json:"false_reject"`
	FalseRejectRate    float64  `json:"false_reject_rate"`
	StateBytesPerKey   float64  `json:"state_bytes_per_key"`
	Keys               int      `json:"keys"`
	MeetsGoals         bool     `json:"meets_goals"`
	Miss               float64  `json:"miss"`
	Margins            []Margin `json:"margins"`

	point Point
}

// Margin is a goal's value at a point and how far it is inside the bound (negative:
// outside).
type Margin struct {
	Goal   string  `json:"goal"`
	Value  float64 `json:"value"`
	Margin float64 `json:"margin"`
}

// CostReport is a GoalCost with its sentence.
type CostReport struct {
	Goal   string       `json:"goal"`
	Change string       `json:"change"`
	With   string       `json:"with,omitempty"`
	Pick   *PointReport `json:"pick"`
	Says   string       `json:"says"`
}

// Verification records the re-check of the recommendation by an ordinary run.
type Verification struct {
	// By is the command whose run the figures come from.
	By string `json:"by"`
	// Figures are the figures compared, all equal (the command fails otherwise).
	Figures []string `json:"figures"`
	// Decisions is how many per-request decisions were compared one by one (0: none).
	Decisions int64 `json:"decisions,omitempty"`
}

// NewReport builds the output value of res over s.
func NewReport(s *Sample, res *Result) *Report {
	r := &Report{Sample: s.Name, Requests: s.Requests(), Labelled: s.Labelled, HeldBytes: s.HeldBytes(), Goals: res.Goals,
		Evaluated: res.Evaluated, Probes: res.Probes}
	if r.Goals == nil {
		r.Goals = []Goal{}
	}
	r.Space.Algorithms, r.Space.Keys = res.Space.Families, res.Space.Keys
	for _, w := range res.Space.Windows {
		d, _ := productDuration(w)
		r.Space.Windows = append(r.Space.Windows, d)
	}
	r.Space.Limits = res.Space.Limits.String()
	if r.Space.Limits == "" {
		r.Space.Limits = fmt.Sprintf("auto: %d a window from 1 to the most a key sent, and the least meeting the goals, bisected", ladderSteps)
	} else if len(res.Space.Limits.Values) == 0 {
		r.Space.Limits += fmt.Sprintf(" (%d steps, and the least meeting the goals, bisected)", ladderSteps)
	}
	r.Space.Bursts = res.Space.Bursts.String()
	if r.Space.Bursts == "" {
		r.Space.Bursts = "auto: at each limit, the least meeting the goals, bisected below the arrival curve"
	} else if len(res.Space.Bursts.Values) == 0 {
		r.Space.Bursts += " (at each limit, the least meeting the goals, bisected)"
	}
	pr := func(p *Point) *PointReport {
		if p == nil {
			return nil
		}
		x := pointReport(*p, res.Goals, s.Labelled)
		return &x
	}
	r.Recommended, r.Closest = pr(res.Recommended), pr(res.Closest)
	r.RunnersUp, r.Front, r.Costs = []PointReport{}, []PointReport{}, []CostReport{}
	for _, p := range res.RunnersUp {
		r.RunnersUp = append(r.RunnersUp, pointReport(p, res.Goals, s.Labelled))
	}
	for _, p := range res.Front {
		r.Front = append(r.Front, pointReport(p, res.Goals, s.Labelled))
	}
	for _, c := range res.Costs {
		r.Costs = append(r.Costs, CostReport{Goal: c.Goal.Text, Change: c.Change, With: c.With, Pick: pr(c.Pick), Says: costSentence(c, res.Recommended, s.Labelled)})
	}
	return r
}

func pointReport(p Point, goals []Goal, labelled bool) PointReport {
	x := PointReport{Algorithm: p.Family, Spec: p.Spec, Key: p.Key, Limit: p.Limit, Window: p.Window.String(), Burst: p.Burst,
		Requests: p.Requests, Admitted: p.Admitted, Rejected: p.Rejected, BackendPeak: p.BackendPeak,
		PeakWindowAdmitted: p.PeakWindowAdmitted, OverAdmission: p.OverAdmission, FalseReject: p.FalseReject,
		FalseRejectRate: p.FalseRejectRate(), StateBytesPerKey: p.StateBytesPerKey, Keys: p.Keys,
		MeetsGoals: p.Meets, Miss: p.Miss, Margins: []Margin{}, point: p}
	if p.Legit > 0 {
		v := p.LegitRejectRate()
		x.LegitRejectRate = &v
	}
	if labelled && p.Attacker > 0 {
		v := p.AttackerAdmitRate()
		x.AttackerAdmitRate = &v
	}
	for _, g := range goals {
		v := g.value(&p.Metrics)
		x.Margins = append(x.Margins, Margin{Goal: g.Text, Value: v, Margin: g.Max - v})
	}
	return x
}

// costSentence says what a goal costs in words.
func costSentence(c GoalCost, rec *Point, labelled bool) string {
	if c.Pick == nil {
		if c.Change == "dropped" {
			return fmt.Sprintf("without %s nothing else in the space meets the other goals either", c.Goal.Text)
		}
		return fmt.Sprintf("%s → %s: nothing at %s meets it", c.Goal.Text, c.With, policyName(rec.Candidate))
	}
	p := c.Pick
	var what string
	switch {
	case p.Candidate == rec.Candidate:
		what = "changes nothing"
	case p.Family == rec.Family && p.Key == rec.Key && p.Window == rec.Window && p.Limit == rec.Limit && p.Burst != rec.Burst:
		what = fmt.Sprintf("needs burst %d instead of %d", p.Burst, rec.Burst)
	case p.Family == rec.Family && p.Key == rec.Key && p.Window == rec.Window && p.Burst == rec.Burst:
		what = fmt.Sprintf("needs limit %d instead of %d", p.Limit, rec.Limit)
	default:
		what = "picks " + policyName(p.Candidate)
	}
	more := ""
	if labelled && p.Candidate != rec.Candidate {
		more = " and lets " + ratioPhrase(p.AttackerAdmitted, rec.AttackerAdmitted, "attacker requests through")
	} else if p.Candidate != rec.Candidate {
		more = ", a backend peak of " + ratioPhrase(p.BackendPeak, rec.BackendPeak, "per second")
	}
	if c.Change == "dropped" {
		return fmt.Sprintf("without %s the pick %s%s", c.Goal.Text, what, more)
	}
	return fmt.Sprintf("%s → %s %s%s", c.Goal.Text, strings.TrimPrefix(c.With, string(c.Goal.Metric)+"<="), what, more)
}

func ratioPhrase(now, before int64, what string) string {
	switch {
	case before == now:
		return "the same " + what
	case before == 0:
		return fmt.Sprintf("%d instead of no %s", now, what)
	}
	return fmt.Sprintf("%d instead of %d %s (%.3g×)", now, before, what, float64(now)/float64(before))
}

// policyName is a candidate in a few words: "token-bucket 100/1m b40 by ip".
func policyName(c Candidate) string {
	w, _ := productDuration(c.Window)
	s := fmt.Sprintf("%s %d/%s", c.Family, c.Limit, w)
	if c.Burst > 0 {
		s += fmt.Sprintf(" b%d", c.Burst)
	}
	return s + " by " + c.Key
}

// WriteJSON writes r as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// csvColumns are the columns of --format csv: one row per point of the front, the
// recommendation marked.
var csvColumns = []string{"sample", "recommended", "algorithm", "spec", "key", "limit", "window_s", "burst", "requests", "admitted",
	"rejected", "legit_reject_rate", "attacker_admit_rate", "backend_peak", "peak_window_admitted", "over_admission",
	"false_reject", "false_reject_rate", "state_bytes_per_key", "keys", "meets_goals", "miss"}

// WriteCSV writes the whole front, one row a point.
func (r *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvColumns); err != nil {
		return err
	}
	opt := func(v *float64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatFloat(*v, 'g', -1, 64)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, p := range r.Front {
		rec := r.Recommended != nil && p.point.Candidate == r.Recommended.point.Candidate
		window, _ := time.ParseDuration(p.Window)
		row := []string{r.Sample, strconv.FormatBool(rec), p.Algorithm, p.Spec, p.Key, i(p.Limit), f(window.Seconds()), i(p.Burst),
			i(p.Requests), i(p.Admitted), i(p.Rejected), opt(p.LegitRejectRate), opt(p.AttackerAdmitRate), i(p.BackendPeak),
			i(p.PeakWindowAdmitted), f(p.OverAdmission), i(p.FalseReject), f(p.FalseRejectRate), f(p.StateBytesPerKey),
			strconv.Itoa(p.Keys), strconv.FormatBool(p.MeetsGoals), f(p.Miss)}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func share(v *float64) string {
	if v == nil {
		return "-"
	}
	return formatPercent(*v)
}

// WriteText writes the report for a terminal (markdown false) or as Markdown; every
// line fits 100 columns but the specs and commands, which are printed whole.
func (r *Report) WriteText(w io.Writer, markdown bool) error {
	var b strings.Builder
	h := func(s string) {
		if markdown {
			fmt.Fprintf(&b, "\n## %s\n\n", s)
		} else {
			fmt.Fprintf(&b, "\n%s\n", s)
		}
	}
	title := fmt.Sprintf("tune %s: %d requests", r.Sample, r.Requests)
	if !r.Labelled {
		title += ", no attacker labels"
	}
	if markdown {
		fmt.Fprintf(&b, "# %s\n\n", title)
	} else {
		fmt.Fprintln(&b, title)
	}
	goals := make([]string, len(r.Goals))
	for i, g := range r.Goals {
		goals[i] = g.Text
	}
	if len(goals) == 0 {
		goals = []string{"none (the least attacker admitted, then backend peak)"}
	}
	fmt.Fprintf(&b, "goals: %s\n", strings.Join(goals, ", "))
	fmt.Fprintf(&b, "space: %s; keys %s; windows %s\n", strings.Join(r.Space.Algorithms, ", "), strings.Join(r.Space.Keys, ", "),
		strings.Join(r.Space.Windows, ", "))
	fmt.Fprintf(&b, "  limits %s\n  bursts %s\n", r.Space.Limits, r.Space.Bursts)
	held := fmt.Sprintf("%d KB", (r.HeldBytes+1<<9)>>10)
	if r.HeldBytes >= 10<<20 {
		held = fmt.Sprintf("%d MB", (r.HeldBytes+1<<19)>>20)
	}
	fmt.Fprintf(&b, "  %d candidates run over every key, %d bisection probes; the sample holds %s\n", r.Evaluated, r.Probes, held)
	point := func(p *PointReport) {
		w, _ := productDuration(p.point.Window)
		fmt.Fprintf(&b, "  spec %s, key %s, promise %d per %s", p.Spec, p.Key, p.Limit, w)
		if p.Burst > 0 {
			fmt.Fprintf(&b, ", burst %d", p.Burst)
		}
		fmt.Fprintln(&b)
		fmt.Fprintf(&b, "  legit refused %s, attacker admitted %s, backend peak %d/s, over-admission %.3f\n",
			share(p.LegitRejectRate), share(p.AttackerAdmitRate), p.BackendPeak, p.OverAdmission)
		for _, m := range p.Margins {
			g := r.goal(m.Goal)
			state := "met, margin " + g.Metric.format(m.Margin)
			if m.Margin < 0 {
				state = "missed by " + g.Metric.format(-m.Margin)
			}
			fmt.Fprintf(&b, "    %-28s %-12s %s\n", m.Goal, g.Metric.format(m.Value), state)
		}
	}
	if r.Recommended != nil {
		h("recommended: " + policyName(r.Recommended.point.Candidate))
		point(r.Recommended)
	} else if r.Closest != nil {
		h("no policy in the space meets the goals; the closest: " + policyName(r.Closest.point.Candidate))
		point(r.Closest)
	}
	if v := r.Verified; v != nil {
		// The command is printed to be copied: words never split, long lines continued
		// with a backslash as a shell reads them.
		lines := wrapWords(shellWords("re-checked by "+v.By), 92)
		for i, line := range lines {
			switch {
			case i == 0 && len(lines) == 1:
				fmt.Fprintf(&b, "  %s:\n", line)
			case i == 0:
				fmt.Fprintf(&b, "  %s \\\n", line)
			case i == len(lines)-1:
				fmt.Fprintf(&b, "      %s:\n", line)
			default:
				fmt.Fprintf(&b, "      %s \\\n", line)
			}
		}
		same := "the same " + strings.Join(v.Figures, ", ")
		if v.Decisions > 0 {
			same += fmt.Sprintf(", and the same %d decisions one by one", v.Decisions)
		}
		for _, line := range wrap(same, 94) {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	if r.Snippet != "" {
		h("for " + r.For)
		if markdown {
			fmt.Fprintf(&b, "```\n%s\n```\n", strings.TrimRight(r.Snippet, "\n"))
		} else {
			fmt.Fprintln(&b, strings.TrimRight(r.Snippet, "\n"))
		}
	}
	if v := r.Served; v != nil {
		h("verified on " + v.URL)
		line := fmt.Sprintf("the first %s of the traffic (%d requests, %d keys) sent to it: the recommendation decides %d of them as the server did (%.2f%%)",
			v.Span, v.Requests, v.Keys, v.Agreed+v.WithinJitter, 100*v.Agreement)
		if v.WithinJitter > 0 {
			line += fmt.Sprintf(", %d of them within the %.1f ms of jitter measured", v.WithinJitter, v.JitterMS)
		}
		for _, l := range wrap(line+".", 98) {
			fmt.Fprintf(&b, "  %s\n", l)
		}
	}
	if len(r.RunnersUp) > 0 {
		h("runner-up of each algorithm")
		r.table(&b, r.RunnersUp, markdown)
	}
	if len(r.Costs) > 0 {
		h("what each goal costs")
		for _, c := range r.Costs {
			for i, line := range wrap(c.Says, 96) {
				if i == 0 {
					fmt.Fprintf(&b, "- %s\n", line)
				} else {
					fmt.Fprintf(&b, "  %s\n", line)
				}
			}
		}
	}
	h(fmt.Sprintf("Pareto front: legit refused, attacker admitted, backend peak (%d of %d candidates)", len(r.Front), r.Evaluated))
	r.table(&b, r.Front, markdown)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) goal(text string) Goal {
	for _, g := range r.Goals {
		if g.Text == text {
			return g
		}
	}
	return Goal{}
}

func (r *Report) table(b *strings.Builder, points []PointReport, markdown bool) {
	head := []string{"", "policy", "legit refused", "attacker admitted", "backend peak", "over-adm", "goals"}
	rows := [][]string{}
	for _, p := range points {
		mark := ""
		if r.Recommended != nil && p.point.Candidate == r.Recommended.point.Candidate {
			mark = "*"
		}
		met := "met"
		if !p.MeetsGoals {
			met = "missed"
		}
		rows = append(rows, []string{mark, policyName(p.point.Candidate), share(p.LegitRejectRate), share(p.AttackerAdmitRate),
			strconv.FormatInt(p.BackendPeak, 10) + "/s", strconv.FormatFloat(p.OverAdmission, 'f', 2, 64), met})
	}
	if markdown {
		fmt.Fprintf(b, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, row := range rows {
			fmt.Fprintf(b, "| %s |\n", strings.Join(row, " | "))
		}
		return
	}
	all := append([][]string{head}, rows...)
	widths := make([]int, len(head))
	for _, row := range all {
		for c, cell := range row {
			widths[c] = max(widths[c], len([]rune(cell)))
		}
	}
	for _, row := range all {
		var line strings.Builder
		for c, cell := range row {
			pad := strings.Repeat(" ", widths[c]-len([]rune(cell)))
			if c <= 1 || c == len(row)-1 {
				line.WriteString(cell + pad) // the mark, the policy and the verdict read left to right
			} else {
				line.WriteString(pad + cell)
			}
			if c < len(row)-1 {
				line.WriteString("  ")
			}
		}
		fmt.Fprintln(b, strings.TrimRight(line.String(), " "))
	}
}

// wrap breaks s at spaces into lines of at most width runes (a longer word stands alone).
func wrap(s string, width int) []string { return wrapWords(strings.Fields(s), width) }

// shellWords splits a command line at its spaces, but not inside single quotes: a quoted
// spec ('nginx:rate=3r/s burst=2 nodelay') stays one word, which a line break continued
// with a backslash must not split.
func shellWords(s string) []string {
	var words []string
	word, quoted := "", false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
			word += string(r)
		case r == ' ' && !quoted:
			if word != "" {
				words = append(words, word)
			}
			word = ""
		default:
			word += string(r)
		}
	}
	if word != "" {
		words = append(words, word)
	}
	return words
}

// wrapWords joins words into lines of at most width runes (a longer word alone).
func wrapWords(words []string, width int) []string {
	var lines []string
	line := ""
	for _, word := range words {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// Served is what tune --verify found: a server running the recommendation, sent the
// first Span of the sample, judged decision by decision against the recommendation's
// model on the arrivals the probe observed.
type Served struct {
	URL      string `json:"url"`
	Span     string `json:"span"`
	Requests int    `json:"requests"`
	Keys     int    `json:"keys"`
	// Agreed are the decisions the model reproduces on the estimated arrivals,
	// WithinJitter those it reproduces with the arrival moved within the measured
	// jitter, and Differ the rest.
	Agreed       int     `json:"agreed"`
	WithinJitter int     `json:"within_jitter"`
	Differ       int     `json:"differ"`
	Agreement    float64 `json:"agreement"`
	JitterMS     float64 `json:"jitter_ms"`
}
