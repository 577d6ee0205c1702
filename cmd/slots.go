package cmd

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rlsim/rlsim/algorithms"
	"github.com/rlsim/rlsim/report"
	"github.com/rlsim/rlsim/scenario"
	"github.com/rlsim/rlsim/store"
)

type slotsOptions struct {
	*globalOptions
	key    string
	limit  int64
	window time.Duration
	calls  int
}

func newSlotsCmd(g *globalOptions, streams IO) *cobra.Command {
	o := &slotsOptions{globalOptions: g}
	c := &cobra.Command{
		Use:   "slots",
		Short: "Whether each script's keys for one call share a Redis Cluster hash slot",
		Long: `slots names the store keys of consecutive calls of every shipped script for one
client, one call a window, and counts the calls whose keys are all in one Redis Cluster
hash slot (CRC16 of the key's hash tag, or of the whole key, mod 16384): a cluster runs
a script only then, and answers CROSSSLOT otherwise. rlsim's keys carry the client key
as their hash tag (rl:{user_8812}:sw:29454361); the first row names the two counters of
the design notes' two-key script as the notes do (rl:user_8812:1784056020), with none.`,
		Example: `  # the notes' two-counter script against rlsim's scripts, 10000 windows of a minute
  rlsim slots

  # another client key, windows of 10 s
  rlsim slots --key 203.0.113.9 --window 10s --calls 1000`,
		Args: argCount(0, 0),
		RunE: func(*cobra.Command, []string) error { return runSlots(o, streams) },
	}
	f := c.Flags()
	f.StringVar(&o.key, "key", "user_8812", "the client key the calls are for")
	o.limit, o.window = 100, time.Minute
	f.Var(unitsValue{&o.limit}, "limit", "limit per window of the scripts' policy")
	f.Var(windowValue{&o.window}, "window", "window: one call in each of --calls consecutive windows")
	f.IntVar(&o.calls, "calls", 10000, "consecutive windows, one call each")
	g.addFormatFlag(c, allFormats...)
	return c
}

// slotsReport is the JSON of rlsim slots.
type slotsReport struct {
	Key     string            `json:"key"`
	Window  report.Duration   `json:"window"`
	Results []store.CallSlots `json:"results"`
}

func runSlots(o *slotsOptions, streams IO) error {
	if o.calls < 1 || o.calls > 10_000_000 {
		return usagef("--calls: must be between 1 and 10000000, got %d", o.calls)
	}
	p := algorithms.Policy{Limit: o.limit, Window: o.window}
	if err := store.CheckPolicy(p); err != nil {
		return usagef("--limit/--window: %v", err)
	}
	rows, err := store.SlotsOfCalls(o.key, p, scenario.DefaultEpoch.UnixNano(), o.calls)
	if err != nil {
		return usagef("%v", err)
	}
	rep := slotsReport{Key: o.key, Window: report.Duration(o.window), Results: rows}
	var buf bytes.Buffer
	if err := renderSlots(&buf, o.format, rep); err != nil {
		return err
	}
	_, err = streams.Out.Write(buf.Bytes())
	return err
}

func renderSlots(w io.Writer, format string, rep slotsReport) error {
	t := slotsTable(rep)
	return writeOutput(w, format, output{JSON: rep, CSV: tableCSV(t), Human: humanTables(t)})
}

// slotsTable is the one table of rlsim slots, with what it means under it.
func slotsTable(rep slotsReport) report.Table {
	t := report.Table{
		Title:  fmt.Sprintf("Redis Cluster slots of each script's keys — client %q, one call a window of %s", rep.Key, time.Duration(rep.Window)),
		Header: []string{"script", "key names", "keys", "calls", "in one slot", "slots (first)"},
		Names:  []string{"script", "naming", "keys_per_call", "calls", "calls_in_one_slot", "first_slots"},
		Width:  100,
	}
	for _, r := range rep.Results {
		slots := make([]string, len(r.FirstSlots))
		for i, s := range r.FirstSlots {
			slots[i] = strconv.Itoa(s)
		}
		t.Rows = append(t.Rows, []string{r.Script, r.Naming, strconv.Itoa(r.KeysPerCall), strconv.Itoa(r.Calls),
			strconv.Itoa(r.CallsInOneSlot), strings.Join(slots, " ")})
	}
	notes, tagged := rep.Results[0], rep.Results[1:]
	t.Notes = append(t.Notes, fmt.Sprintf("The notes' names: %d of %d calls in one slot (first: %s) — Redis Cluster refuses the others with CROSSSLOT; a hash tag on the client key (rl:{%s}:…) keeps every call's keys together.",
		notes.CallsInOneSlot, notes.Calls, strings.Join(notes.FirstKeys, " and "), rep.Key))
	for _, r := range tagged {
		if r.KeysPerCall > 1 {
			t.Notes = append(t.Notes, fmt.Sprintf("rlsim's %s: %d of %d in one slot (first: %s).", r.Script, r.CallsInOneSlot, r.Calls, strings.Join(r.FirstKeys, " and ")))
		}
	}
	return t
}
