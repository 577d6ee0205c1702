package algorithms

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"
)

// KongName is Kong's rate-limiting plugin's name in specs.
const KongName = "kong"

// kongPeriods are the plugin's periods, shortest first, with the counters' TTLs
// (kong/plugins/rate-limiting/expiration.lua): a month's counter lives 30 days and a
// year's 365, whatever the calendar says.
var kongPeriods = []struct {
	name    string
	seconds int64 // the window's length; 0 for the calendar's month and year
	ttl     int64 // the counter's TTL, seconds
}{
	{"second", 1, 1}, {"minute", 60, 60}, {"hour", 3600, 3600}, {"day", 86400, 86400},
	{"month", 0, 2592000}, {"year", 0, 31536000},
}

func init() {
	params := make([]Param, 0, len(kongPeriods)+1)
	for _, p := range kongPeriods {
		params = append(params, Param{Name: p.name, Doc: "requests per " + p.name + " (calendar-aligned, UTC)"})
	}
	params = append(params, Param{Name: "policy", Doc: "local (the default: one node's counters; refused requests not counted) or redis (sync_rate −1: every request counted on every period)"})
	Register(Kind{
		Name: KongName, Rank: 240,
		Summary: "Kong rate-limiting: several fixed windows at once (second … year, calendar-aligned in UTC), every one of which must admit",
		Params:  params, Configure: configureKong, Counters: "policy=redis",
	})
}

var errKongNoLimit = errors.New("at least one of second, minute, hour, day, month, year is required, as the plugin's schema requires")

func configureKong(args Args) (Model, error) {
	m := kongModel{name: specText(KongName, args)}
	var longest kongLimit
	for i, p := range kongPeriods {
		if !args.Has(p.name) {
			continue
		}
		limit, err := args.count(p.name, "requests", 0, 1)
		if err != nil {
			return nil, err
		}
		// The schema refuses a longer period with a lower limit than a shorter one.
		if len(m.limits) > 0 && limit < longest.limit {
			return nil, fmt.Errorf("%s=%d is lower than %s=%d: the plugin refuses a longer period with a lower limit", p.name, limit, kongPeriods[longest.period].name, longest.limit)
		}
		longest = kongLimit{period: i, limit: limit}
		m.limits = append(m.limits, longest)
	}
	if len(m.limits) == 0 {
		return nil, errKongNoLimit
	}
	switch policy := args["policy"]; policy {
	case "", "local":
	case "redis":
		m.redis = true
	case "cluster":
		return nil, errors.New("policy=cluster keeps the counters in Kong's database, shared by a fleet; one node decides as policy=local does: write policy=local")
	default:
		return nil, fmt.Errorf("policy: want local or redis, got %q", policy)
	}
	return m, nil
}

type kongLimit struct {
	period int // index in kongPeriods
	limit  int64
}

type kongModel struct {
	name   string
	limits []kongLimit
	redis  bool
}

func (m kongModel) New(Policy) (Limiter, error) {
	k := &Kong{name: m.name, limits: make([]int64, len(m.limits)), redis: m.redis, least: math.MaxInt64,
		windows: make([]kongWindows, len(m.limits))}
	for i, l := range m.limits {
		k.limits[i] = l.limit
		k.least = min(k.least, l.limit)
		k.windows[i].seconds = kongPeriods[l.period].seconds
		k.windows[i].ttlMs = kongPeriods[l.period].ttl * 1000
		k.windows[i].months = map[int]int{4: 1, 5: 12}[l.period]
		if k.windows[i].seconds > 0 {
			k.fixed++
		}
	}
	k.stride = kongCount + 2*len(k.limits) - k.fixed
	// The compact records hold counts below kongSaturated and no calendar expiry.
	k.compact = k.fixed == len(k.limits) && slices.Max(k.limits) < kongSaturated
	return k, nil
}

// Bound: every configured period must admit, so the least of their own bounds holds. A
// period of fixed length P meets at most ⌈T/P⌉+1 windows in T. A calendar month is at
// least 28 days, and its counter may restart once inside it (a counter created on the
// 1st lives 30 days, so a 31-day month has a second one); a year likewise (365 days of
// TTL, 366 in a leap year): at most 2·(⌈T/28d⌉+1) month counters and 2·(⌈T/365d⌉+1)
// year counters meet T — a loose count, the binding period is nearly always a short one.
func (m kongModel) Bound(p Policy, span time.Duration) (Bound, bool) {
	span = spanOf(p, span)
	best := Bound{Reached: true, Source: "Kong rate-limiting (kong/plugins/rate-limiting/handler.lua, policies/init.lua, 3.9): every configured period's counter must admit; the least of their fixed-window bounds"}
	for _, l := range m.limits {
		per := kongPeriods[l.period]
		var met int64
		var formula string
		switch per.name {
		case "month":
			met, formula = 2*windowsMet(span, 28*24*time.Hour), "month·2·(⌈T/28d⌉+1)"
		case "year":
			met, formula = 2*windowsMet(span, 365*24*time.Hour), "year·2·(⌈T/365d⌉+1)"
		default:
			met, formula = windowsMet(span, time.Duration(per.seconds)*time.Second), per.name+"·(⌈T/1"+per.name+"⌉+1)"
		}
		if v := float64(l.limit * met); best.Formula == "" || v < best.Value {
			best.Value, best.Formula = v, "min over periods; here "+formula
		}
	}
	return best, true
}

// Kong is the open-source rate-limiting plugin of Kong Gateway, one consumer (rlsim's
// key) on one node, as kong/plugins/rate-limiting/handler.lua, policies/init.lua,
// expiration.lua and kong/tools/timestamp.lua decide in 3.9 (read at 3.9.1, b724fc7; the
// rule is the same since 3.4). For every configured period the plugin reads the counter of
// the period's current window — calendar-aligned in UTC on ngx.time()'s whole seconds:
// the second, the minute from :00, the hour, the day from 00:00, the month from the 1st,
// the year from January 1 — and refuses the request if any counter has reached its limit.
// With policy=local an admitted request then adds one to every period's counter, and a
// refused one nothing; with policy=redis (sync_rate −1, 3.4 and later) the read itself is
// an INCR, so every request, refused or not, counts on every period. A counter lives for
// its period's TTL from its creation, which for a month is 30 days and for a year 365: a
// month's counter created on the 1st ends on the 31st, inside the month, and the count
// starts over there. With periods of fixed length alone it keeps 4 bytes per key and 4 per
// period (see kongSmall: 16 bytes for three); with a month or a year, 8 bytes per key, 8
// per period and 8 more per month or year period (see kongRecord).
//
// Where it parts from the fixed window (fixed-window): several windows at once, each of
// which must admit, aligned to the calendar rather than to multiples of one length. The
// short window's edge lets 2·limit through in an instant while the long one caps the
// total: second=10 minute=100 admits 20 across a second's edge but never 101 in a
// minute. The async counting of policy=local (an ngx.timer after the response) lets
// concurrent requests overshoot on a real node; the model counts each admission before
// the next request, as a node that is never busy does.
//
// A request of cost c adds c to each counter and must fit every limit whole (Kong counts
// one per request), so cost 1 is the product exactly. policy=redis with sync_rate > 0
// decides on one node as policy=local does between syncs. In a fleet, policy=redis is
// shared (SharedCounters): on the shared placement the nodes count in one store, one atomic
// INCRBY+EXPIRE per period as the plugin's usage() sends it (store.Counters), and on the
// global-sync placement to the store each node keeps every period's count and syncs its
// delta every sync_rate (cluster/globalsync.go).
//
// Decisions: Remaining is the least of limit − count over the periods. RetryAfter of a
// refused request is the time until every period that would still refuse it has started
// a new window (or its counter expired), Never for a cost above the lowest limit; Reset
// the time until every counter holding anything has.
//
// Time that goes backwards: each period's counter only moves forward. A request stamped in
// a window before its counter's counts in the counter's window, and a counter expires only
// for a request at or after its expiry, so a step back never starts a count over.
type Kong struct {
	name    string
	limits  []int64 // per configured period, shortest first
	least   int64   // the lowest of limits
	fixed   int     // how many periods have a fixed length: the calendar's come after them
	redis   bool
	windows []kongWindows // per configured period
	stride  int           // a key's words in state: 1 + len(limits) + len(limits) − fixed
	state   []int64       // per key: its record (see kongRecord), once wide
	// compact holds the records in small (see kongSmall) rather than state: every
	// period has a fixed length and every limit fits, and no window end has yet fallen
	// outside the 2³² seconds around the first one.
	compact bool
	small   []uint32 // per key: its compact record, stride words
	based   bool     // secBase is set: some key has been decided
	secBase int64    // Unix seconds that a compact window end counts from
	now     kongNow  // the windows of the latest compact decision
}

// kongSmall: while every period has a fixed length, a key's record is stride 32-bit
// words, the same words as kongRecord's: [0] the end of the shortest period's window of
// the latest request counted, in whole seconds after secBase (windows end on whole
// seconds; 0 for a key never counted), then each period's count, which saturates at
// kongSaturated. Three periods take 16 bytes per key, as the fixed window's record does,
// where the wide record takes 32: at a million keys the record is a memory read. A count
// held at kongSaturated decides as the true one does, since every limit is below it: it
// refuses any request, and leaves nothing remaining. secBase is set 2³¹ seconds before the
// window end of the first compact decision, so ends within 68 years of it either way fit; an end that does
// not turns the whole state wide for good, exactly (widen), as does nothing else.
const kongSaturated = math.MaxUint32

// saturating returns c + cost, at most kongSaturated.
func saturating(c uint32, cost int64) uint32 {
	return uint32(min(uint64(c)+uint64(cost), kongSaturated))
}

// kongRecord: a key's record in Kong.state is stride words:
//
//	[0]                 the end of the shortest period's window of the latest request
//	                    counted, Unix milliseconds (unseen for a key never counted)
//	[1 … n]             each period's count
//	[n+1 …]             each calendar period's counter expiry (its TTL's end), ms
//
// Every counted request counts on every period, so all the counters are those of the
// windows holding one instant, the latest counted (M): windows nest (a UTC second lies in
// one minute, hour, day, month and year), and a request in a later window of a period
// starts that period's counter over in its own window, which holds M from then on. So
// one word tells every fixed period's window: a request before the shortest window's
// end lies in the windows of M (a step back counts in them too, as a counter that only
// moves forward does), and a later one in period i's window of M iff it comes before
// that window's end, found from the shortest window's last millisecond. A fixed
// period's TTL is its length and never ends a counter before its window does; a month's
// or a year's can, and is kept.
const (
	kongEnd   = 0 // kongRecord's words
	kongCount = 1
)

// kongWindows finds a period's window: fixed lengths by division, the calendar's month
// and year from the UTC date, remembering the last one found, so that most requests
// find theirs with two comparisons.
type kongWindows struct {
	seconds    int64 // the window's length, or 0 for a calendar period
	months     int   // a calendar period's length in months
	ttlMs      int64
	start, end int64 // the window found last, [start, end) in Unix milliseconds
}

// startOf returns the start of the window holding ms, Unix milliseconds.
func (w *kongWindows) startOf(ms int64) int64 {
	if ms < w.start || ms >= w.end {
		w.find(ms)
	}
	return w.start
}

// endOf returns the end of the window holding ms, Unix milliseconds.
func (w *kongWindows) endOf(ms int64) int64 {
	if ms < w.start || ms >= w.end {
		w.find(ms)
	}
	return w.end
}

//go:noinline
func (w *kongWindows) find(ms int64) {
	sec := floorDiv(ms, 1000)
	if w.seconds > 0 {
		first := floorDiv(sec, w.seconds) * w.seconds
		w.start, w.end = first*1000, (first+w.seconds)*1000
		return
	}
	t := time.Unix(sec, 0).UTC()
	month := t.Month()
	if w.months == 12 {
		month = time.January
	}
	first := time.Date(t.Year(), month, 1, 0, 0, 0, 0, time.UTC)
	w.start, w.end = first.Unix()*1000, first.AddDate(0, w.months, 0).Unix()*1000
}

var (
	_ Limiter  = (*Kong)(nil)
	_ Admitter = (*Kong)(nil)
)

// Name returns the spec, "kong:second=… minute=… policy=…".
func (k *Kong) Name() string { return k.name }

// Allow decides a request of the given cost for key at now.
func (k *Kong) Allow(key uint32, now int64, cost int64) Decision {
	cost = max(cost, 1)
	ok := k.decide(key, now, cost)
	ms := nsToMs(now)
	var buf [kongCount + 2*6]int64
	rec := k.record(key, &buf)
	d := Decision{Allowed: ok, Remaining: 1<<63 - 1}
	var retry, reset int64 // the latest instant, ms, at which a blocking or any counter ends
	for i, limit := range k.limits {
		usage, until, _ := k.usage(rec, i, ms)
		if usage > 0 {
			reset = max(reset, until)
		}
		d.Remaining = min(d.Remaining, max(limit-usage, 0))
		// A counter that holds nothing blocks only a cost above its limit, which is
		// Never below.
		if usage > 0 && usage+cost > limit {
			retry = max(retry, until)
		}
	}
	d.Reset = ahead(msToNs(reset), now)
	switch {
	case ok:
	case cost > k.least:
		d.RetryAfter = Never
	default:
		d.RetryAfter = ahead(msToNs(retry), now)
	}
	return d
}

// Admit decides as Allow does, without the decision's Remaining, RetryAfter and Reset.
func (k *Kong) Admit(key uint32, now int64, cost int64) (bool, time.Duration) {
	cost = max(cost, 1)
	// decideSmall's commonest case, the shortest window of the key's latest request
	// counted holding now, taken here without a call.
	if !k.compact {
		return k.decide(key, now, cost), 0
	}
	if base := int(key) * k.stride; base < len(k.small) && now >= k.now.from && now < k.now.to {
		if rec := k.small[base : base+k.stride]; rec[kongEnd] >= k.now.end {
			return k.countLive(rec[kongCount:], cost), 0
		}
	}
	return k.decideSmall(key, now, cost), 0
}

// record is key's record (see kongRecord); a compact one is widened into buf.
func (k *Kong) record(key uint32, buf *[kongCount + 2*6]int64) []int64 {
	base := int(key) * k.stride
	if !k.compact {
		return k.state[base : base+k.stride]
	}
	rec := buf[:k.stride]
	k.widenRecord(rec, k.small[base:base+k.stride])
	return rec
}

// widenRecord writes compact record from into wide record to.
func (k *Kong) widenRecord(to []int64, from []uint32) {
	to[kongEnd] = unseen
	if from[kongEnd] != 0 {
		to[kongEnd] = (k.secBase + int64(from[kongEnd])) * 1000
	}
	for i := kongCount; i < len(from); i++ {
		to[i] = int64(from[i])
	}
}

// widen turns the compact state into wide records, for good.
//
//go:noinline
func (k *Kong) widen() {
	k.state = make([]int64, len(k.small))
	for base := 0; base < len(k.small); base += k.stride {
		k.widenRecord(k.state[base:base+k.stride], k.small[base:base+k.stride])
	}
	k.small, k.compact = nil, false
}

// usage is what period i's counter in record rec holds for a request at ms (0 once its
// window has passed or its TTL run out), until when it holds it, Unix milliseconds, and
// whether it is live at all.
func (k *Kong) usage(rec []int64, i int, ms int64) (usage, until int64, live bool) {
	end := rec[kongEnd]
	if end == unseen {
		return 0, 0, false
	}
	if i > 0 {
		end = k.windows[i].endOf(rec[kongEnd] - 1)
	}
	if i >= k.fixed {
		end = min(end, rec[k.expiry(i)])
	}
	if ms >= end {
		return 0, 0, false
	}
	return rec[kongCount+i], end, true
}

// expiry is the index in a record of calendar period i's counter expiry.
func (k *Kong) expiry(i int) int { return kongCount + len(k.limits) + i - k.fixed }

// nsToMs is ⌊now/1ms⌋, Kong's clock (ngx.now() in milliseconds), by a constant that the
// compiler divides by with a multiplication.
func nsToMs(now int64) int64 {
	ms := now / int64(time.Millisecond)
	if now%int64(time.Millisecond) < 0 {
		ms--
	}
	return ms
}

// decide is the plugin's access phase and its increment: every period's counter is
// read, and if all admit (or on Redis, whatever they say) each adds cost, a counter
// that has ended starting over at cost.
func (k *Kong) decide(key uint32, now, cost int64) bool {
	if k.compact {
		return k.decideSmall(key, now, cost)
	}
	base := int(key) * k.stride
	if base >= len(k.state) {
		k.grow(key)
	}
	rec := k.state[base : base+k.stride]
	ms := nsToMs(now)
	if ms >= rec[kongEnd] || k.fixed < len(k.limits) {
		return k.decideAnew(rec, ms, cost)
	}
	// The shortest window of the latest request counted holds ms, so every period's
	// window does, and every counter is live.
	counts := rec[kongCount : kongCount+len(k.limits)]
	limits := k.limits[:len(counts)]
	ok := cost <= k.least
	for i, c := range counts {
		if c+cost > limits[i] {
			ok = false
		}
	}
	if ok || k.redis {
		for i := range counts {
			counts[i] += cost
		}
	}
	return ok
}

// decideAnew is decide for a request after the shortest window of the latest request
// counted, or for a plugin with a calendar period: each counter is looked at on its own.
func (k *Kong) decideAnew(rec []int64, ms, cost int64) bool {
	var live [6]bool // one per period kongPeriods names
	last := rec[kongEnd]
	ok := cost <= k.least
	for i, limit := range k.limits {
		// Before the shortest window's end, every window is M's; after it, period i's
		// is M's if it holds the shortest window's last millisecond too. (The window of
		// ms, the latest request's, is the one the period remembers.)
		l := ms < last || i > 0 && last != unseen && last-1 >= k.windows[i].startOf(ms)
		if i >= k.fixed {
			l = l && ms < rec[k.expiry(i)]
		}
		live[i] = l
		if l && rec[kongCount+i]+cost > limit {
			ok = false
		}
	}
	if !ok && !k.redis {
		return false // refused before any increment
	}
	for i := range k.limits {
		if live[i] {
			rec[kongCount+i] += cost
			continue
		}
		rec[kongCount+i] = cost
		if i >= k.fixed {
			rec[k.expiry(i)] = ms + k.windows[i].ttlMs
		}
	}
	if ms >= last {
		rec[kongEnd] = k.windows[0].endOf(ms)
	}
	return ok
}

// kongNow is the shortest period's window that the latest compact decision fell in, with
// every configured period's window start, in compact seconds (after secBase): a request
// in the same window finds all its windows with two comparisons of nanoseconds, with no
// division and no look at the calendar. Each period's window holds the shortest one's,
// since the fixed lengths nest (a second lies in one minute, an hour, a day).
type kongNow struct {
	from, to int64    // the shortest period's window, [from, to) in Unix nanoseconds; from ≥ to while there is none
	end      uint32   // its end in compact seconds, as kongSmall's word [0] holds it
	starts   [6]int64 // per configured period, its window's start in compact seconds
}

// next moves k.now on to the shortest period's next window, now's, and reports whether it
// could: now must lie in that window, whose end must fit the compact clock. A longer
// period's window moves on only when the shorter one's start reaches its end, the lengths
// nesting, so most moves compare one start per period and divide nothing.
func (k *Kong) next(now int64) bool {
	first := k.windows[0].seconds
	step := first * int64(time.Second)
	if k.now.from >= k.now.to || now < k.now.to || now-k.now.to >= step || k.now.to > math.MaxInt64-step ||
		int64(k.now.end) > math.MaxUint32-first {
		return false
	}
	start := int64(k.now.end)
	for i := range k.limits {
		if length := k.windows[i].seconds; start >= k.now.starts[i]+length {
			k.now.starts[i] += length
		}
	}
	k.now.from, k.now.to = k.now.to, k.now.to+step
	k.now.end += uint32(first)
	return true
}

// at makes k.now the windows of now and reports whether they fit the compact clock; if
// not, k.now holds none.
//
//go:noinline
func (k *Kong) at(now int64) bool {
	k.now = kongNow{}
	ms := nsToMs(now)
	end := k.windows[0].endOf(ms) / 1000 // windows end on whole seconds
	if !k.based {
		k.secBase, k.based = end-1<<31, true
	}
	rel := end - k.secBase
	if rel < 1 || rel > math.MaxUint32 {
		return false
	}
	for i := range k.limits {
		k.now.starts[i] = k.windows[i].startOf(ms)/1000 - k.secBase
	}
	k.now.end = uint32(rel)
	k.now.from, k.now.to = nsOfMs(k.windows[0].start), nsOfMs(k.windows[0].end)
	return true
}

// nsOfMs is ms Unix milliseconds in nanoseconds, held within the int64 range.
func nsOfMs(ms int64) int64 {
	const perMs = int64(time.Millisecond)
	switch {
	case ms > math.MaxInt64/perMs:
		return math.MaxInt64
	case ms < math.MinInt64/perMs:
		return math.MinInt64
	}
	return ms * perMs
}

// decideSmall is decide on a compact record (see kongSmall) for a request at now, Unix
// nanoseconds.
func (k *Kong) decideSmall(key uint32, now, cost int64) bool {
	base := int(key) * k.stride
	if base >= len(k.small) {
		k.growSmall(key)
	}
	rec := k.small[base : base+k.stride]
	if (now < k.now.from || now >= k.now.to) && !k.next(now) && !k.at(now) {
		return k.decideSmallAnew(base, rec, nsToMs(now), cost)
	}
	counts := rec[kongCount:]
	limits := k.limits[:len(counts)]
	ok := cost <= k.least
	if last := int64(rec[kongEnd]); last < int64(k.now.end) {
		// The latest request counted lies in an earlier shortest window than now's:
		// period i's counter is live iff its window holds that window's last second
		// too, that is iff last − 1 ≥ its start. (A key never counted, last 0, holds
		// counts of 0, live or not.)
		starts := k.now.starts[:len(counts)]
		var held [6]uint32 // what each counter holds for now
		var over int64     // negative once some counter has no room for cost
		for i, c := range counts {
			if last <= starts[i] {
				c = 0
			}
			over |= limits[i] - int64(c) - cost
			held[i] = c
		}
		ok = ok && over >= 0
		if !ok && !k.redis {
			return false // refused before any increment
		}
		for i := range counts {
			counts[i] = saturating(held[i], cost)
		}
		rec[kongEnd] = k.now.end
		return ok
	}
	// The shortest window of the latest request counted holds now (or a later one does,
	// and now counts in it): every counter is live.
	return k.countLive(counts, cost)
}

// countLive decides a request of cost on a compact record's counts, every one of them
// live, and counts it as the policy does.
func (k *Kong) countLive(counts []uint32, cost int64) bool {
	limits := k.limits[:len(counts)]
	var over int64 // negative once some counter has no room for cost (exact while cost ≤ least, all that counts)
	for i, c := range counts {
		over |= limits[i] - int64(c) - cost
	}
	ok := cost <= k.least && over >= 0
	if ok || k.redis {
		for i, c := range counts {
			counts[i] = saturating(c, cost)
		}
	}
	return ok
}

// decideSmallAnew is decideAnew on a compact record, every period of a fixed length, for a
// request whose windows k.now cannot hold (their end falls outside the compact clock):
// counting it turns the records wide.
func (k *Kong) decideSmallAnew(base int, rec []uint32, ms, cost int64) bool {
	var live [6]bool
	last := int64(unseen)
	if rec[kongEnd] != 0 {
		last = (k.secBase + int64(rec[kongEnd])) * 1000
	}
	ok := cost <= k.least
	for i, limit := range k.limits {
		l := ms < last || i > 0 && last != unseen && last-1 >= k.windows[i].startOf(ms)
		live[i] = l
		if l && int64(rec[kongCount+i])+cost > limit {
			ok = false
		}
	}
	if !ok && !k.redis {
		return false
	}
	for i := range k.limits {
		c := uint32(0)
		if live[i] {
			c = rec[kongCount+i]
		}
		rec[kongCount+i] = saturating(c, cost)
	}
	if ms < last {
		return ok
	}
	end := k.windows[0].endOf(ms) / 1000 // windows end on whole seconds
	if !k.based {
		k.secBase, k.based = end-1<<31, true
	}
	if e := end - k.secBase; e >= 1 && e <= math.MaxUint32 {
		rec[kongEnd] = uint32(e)
		return ok
	}
	// Beyond the compact clock: every record turns wide, this one with its counts
	// already charged.
	k.widen()
	k.state[base+kongEnd] = end * 1000
	return ok
}

// growSmall makes room for key's compact record.
//
//go:noinline
func (k *Kong) growSmall(key uint32) {
	k.small = grow(k.small, uint32((int(key)+1)*k.stride-1), 0)
}

// grow makes room for key's record.
//
//go:noinline
func (k *Kong) grow(key uint32) {
	for len(k.state) < (int(key)+1)*k.stride {
		k.state = append(k.state, unseen)
	}
}

// Keys returns the number of keys held: the highest key decided plus one.
func (k *Kong) Keys() int {
	if k.compact {
		return len(k.small) / k.stride
	}
	return len(k.state) / k.stride
}

// StateBytes returns, per key held, 4 bytes and 4 per period while the records are
// compact (see kongSmall), and otherwise 8 bytes, 8 per configured period and 8 more per
// calendar period (month, year).
func (k *Kong) StateBytes() int64 {
	if k.compact {
		return int64(len(k.small)) * int64(unsafe.Sizeof(uint32(0)))
	}
	return int64(len(k.state)) * int64(unsafe.Sizeof(int64(0)))
}

// Counters returns the counters of the plugin's shared form when the spec has
// policy=redis: one per configured period, shortest first, each the window its UTC
// calendar period holds and the counter's TTL (expiration.lua).
func (m kongModel) Counters() ([]Counter, bool) {
	if !m.redis {
		return nil, false
	}
	var periods []Counter
	for _, l := range m.limits {
		per := kongPeriods[l.period]
		periods = append(periods, Counter{Name: per.name, Limit: l.limit, TTL: time.Duration(per.ttl) * time.Second,
			windows: kongWindows{seconds: per.seconds, months: map[int]int{4: 1, 5: 12}[l.period]}})
	}
	return periods, true
}
