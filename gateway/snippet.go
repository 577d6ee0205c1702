package gateway

import (
	"fmt"
	"net/textproto"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Snippet writes the configuration that deploys spec — a model's spec as rlsim writes it
// ("nginx:rate=10r/s burst=20 nodelay") — counting on key, rlsim's key as --key writes it
// ("ip", "xff:1", "api-key", "header:X-Api-Key"), in the words of the product the spec
// names: nginx limit_req_zone and limit_req; an HAProxy stick table, track-sc and deny;
// an Envoy local_ratelimit filter; a Kong rate-limiting plugin; a Traefik rateLimit
// middleware. For Redis, spec is a built-in algorithm that has a store script with the
// policy as its parameters, as --limit, --window and --burst give it
// ("token-bucket:limit=100 window=1s burst=20"; burst for token-bucket and gcra alone,
// default the limit), and the snippet is the store's script to load and the EVALSHA call
// that runs it, as redis-cli commands. The snippet starts with comments naming spec and
// key and saying where its lines go.
//
// Every snippet but the Redis one reads back through Parse, in its product's format, as
// spec and key again: a duration or number written in another form comes back in the
// form import writes (period=60s as 1m), an Envoy version= is no part of the
// configuration, and key header:NAME comes back as the identity that header carries
// when rlsim knows one (header:X-Api-Key as api-key), with no key otherwise. The
// identities user, api-key, tenant and account are read from the request headers
// X-User, X-Api-Key, X-Tenant and X-Account, the headers rlsim probe sends.
//
// A spec that does not parse, a product without a snippet, or a key the product cannot
// count on is an error that names the spec or the key and the product, and no text.
func Snippet(spec, key string) (string, error) {
	text := strings.TrimSpace(spec)
	product, rest, _ := strings.Cut(text, ":")
	w, ok := snippetWriters[product]
	if !ok {
		return "", fmt.Errorf("spec %q: no configuration snippet for %q (want a spec of %s)", spec, product, snippetProducts())
	}
	sets, err := w.parse(rest)
	if err != nil {
		return "", fmt.Errorf("spec %q: %w", spec, err)
	}
	k, err := parseSnippetKey(key)
	if err != nil {
		return "", err
	}
	if !slices.Contains(w.keys, k.kind) && !slices.Contains(w.keys, k.text) {
		why := w.why(k)
		return "", fmt.Errorf("key %s: %s cannot count on it: %s (%s counts on %s)", key, w.name, why, w.name, strings.Join(keyKindNames(w.keys), ", "))
	}
	s := snippetSpec{text: product + ":" + joinSets(sets), sets: sets}
	if len(sets) == 1 && len(sets[0]) == 0 {
		s.text = product
	}
	return w.write(s, k)
}

// snippetWriter writes the configuration of one product.
type snippetWriter struct {
	// product is the spec's name before its colon; name the product in messages.
	product, name string
	// params are the spec's parameters, in the canonical order; flags those written bare.
	params, flags []string
	// stacks lets a spec give several sets of parameters joined by "+".
	stacks bool
	// keys are the kinds of key the product counts on, or a key itself ("xff:1") where
	// the product counts on that one of its kind alone.
	keys []string
	// check refuses a set of parameters the product's model refuses.
	check func(set []Param) error
	// why says why the product cannot count on a key outside keys.
	why   func(k snippetKey) string
	write func(s snippetSpec, k snippetKey) (string, error)
}

var snippetWriters = map[string]snippetWriter{}

// registerSnippet makes a product's snippet known to Snippet; each product's file calls
// it from init.
func registerSnippet(w snippetWriter) {
	if _, dup := snippetWriters[w.product]; dup {
		panic("gateway: snippet for " + w.product + " registered twice")
	}
	snippetWriters[w.product] = w
}

// SnippetProducts lists the spec names Snippet writes a configuration for, sorted.
func SnippetProducts() []string {
	names := make([]string, 0, len(snippetWriters))
	for n := range snippetWriters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func snippetProducts() string { return strings.Join(SnippetProducts(), ", ") }

// snippetSpec is a spec Snippet writes: its text with the parameters in canonical order,
// and its sets of parameters, in that order.
type snippetSpec struct {
	text string
	sets [][]Param
}

// value is the value of the parameter name in set, and whether the set gives it.
func value(set []Param, name string) (string, bool) {
	for _, p := range set {
		if p.Name == name {
			return p.Value, true
		}
	}
	return "", false
}

// parse reads the parameters after a spec's colon: sets joined by "+" when the product
// stacks them, each one or more words "name=value" or "flag", checked against the
// product's names and its model's values, and put in canonical order.
func (w snippetWriter) parse(rest string) ([][]Param, error) {
	parts := []string{rest}
	if w.stacks {
		parts = strings.Split(rest, "+")
	} else if strings.Contains(rest, "+") {
		return nil, fmt.Errorf("%s takes one set of parameters, not several joined by +", w.product)
	}
	var sets [][]Param
	for i, part := range parts {
		var set []Param
		for _, tok := range strings.Fields(part) {
			name, val, valued := strings.Cut(tok, "=")
			flag := slices.Contains(w.flags, name)
			switch {
			case !slices.Contains(w.params, name) && !flag:
				return nil, fmt.Errorf("unknown parameter %q (want %s)", name, strings.Join(w.params, ", "))
			case slices.ContainsFunc(set, func(p Param) bool { return p.Name == name }):
				return nil, fmt.Errorf("parameter %s given twice", name)
			case flag && valued:
				return nil, fmt.Errorf("%s is a flag and takes no value, got %q", name, tok)
			case !flag && (!valued || val == ""):
				return nil, fmt.Errorf("%s needs a value (%s=…)", name, name)
			}
			set = append(set, Param{Name: name, Value: val, Flag: flag})
		}
		if len(set) == 0 && len(parts) > 1 {
			return nil, fmt.Errorf("set %d of the parameters joined by + is empty", i+1)
		}
		slices.SortStableFunc(set, func(a, b Param) int { return w.order(a.Name) - w.order(b.Name) })
		if err := w.check(set); err != nil {
			if len(parts) > 1 {
				return nil, fmt.Errorf("set %d: %w", i+1, err)
			}
			return nil, err
		}
		sets = append(sets, set)
	}
	return sets, nil
}

func (w snippetWriter) order(name string) int {
	if i := slices.Index(w.params, name); i >= 0 {
		return i
	}
	return len(w.params) + slices.Index(w.flags, name)
}

// joinSets writes sets as a spec writes them: "rate=10r/s burst=5 nodelay + rate=2r/s".
func joinSets(sets [][]Param) string {
	texts := make([]string, len(sets))
	for i, set := range sets {
		words := make([]string, len(set))
		for j, p := range set {
			words[j] = p.Name
			if !p.Flag {
				words[j] += "=" + p.Value
			}
		}
		texts[i] = strings.Join(words, " ")
	}
	return strings.Join(texts, " + ")
}

// snippetKey is a key as Snippet reads it.
type snippetKey struct {
	text string // as given
	kind string // one of keyKinds
	n    int    // ipv6/N's prefix length, xff:K's proxies
	// header is the request header the key reads, in canonical form (X-Api-Key): the
	// header of header:NAME, or the one that carries an identity.
	header string
}

// keyKinds are the kinds of rlsim's keys, as --key writes them ("ipv6" for ipv6/N,
// "xff" for xff:K, "header" for header:NAME).
var keyKinds = []string{"user", "account", "tenant", "api-key", "route", "ip", "ipv6", "xff", "xff-leftmost", "header"}

// identityHeaders are the request headers that carry rlsim's identities in a snippet:
// the headers headerKeys maps onto them, and the one rlsim probe sends a key in.
var identityHeaders = map[string]string{"user": "X-User", "api-key": "X-Api-Key", "tenant": "X-Tenant", "account": "X-Account"}

// headerNameRE is a header name every product's configuration can name without quoting.
var headerNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

func parseSnippetKey(key string) (snippetKey, error) {
	k := snippetKey{text: key, kind: key}
	if h, ok := identityHeaders[key]; ok {
		k.header = h
		return k, nil
	}
	switch key {
	case "route", "ip", "xff-leftmost":
		return k, nil
	}
	if n, ok := strings.CutPrefix(key, "ipv6/"); ok {
		bits, err := strconv.Atoi(n)
		if err != nil || bits < 0 || bits > 128 || n != strconv.Itoa(bits) {
			return k, fmt.Errorf("key %q: the prefix length must be a whole number from 0 to 128", key)
		}
		k.kind, k.n = "ipv6", bits
		return k, nil
	}
	if n, ok := strings.CutPrefix(key, "xff:"); ok {
		hops, err := strconv.Atoi(n)
		if err != nil || hops < 1 || hops > 64 || n != strconv.Itoa(hops) {
			return k, fmt.Errorf("key %q: the number of trusted proxies must be a whole number from 1 to 64", key)
		}
		k.kind, k.n = "xff", hops
		return k, nil
	}
	if h, ok := strings.CutPrefix(key, "header:"); ok {
		h = strings.TrimSpace(h)
		if !headerNameRE.MatchString(h) {
			return k, fmt.Errorf("key %q: want header:NAME with a header name of letters, digits, - and _ (header:X-Api-Key)", key)
		}
		k.kind, k.header = "header", textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(h, "_", "-"))
		return k, nil
	}
	return k, fmt.Errorf("unknown key %q (want user, account, tenant, api-key, route, ip, ipv6/N, xff:K, xff-leftmost or header:NAME)", key)
}

// keyKindNames writes kinds as --key writes them.
func keyKindNames(kinds []string) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = map[string]string{"ipv6": "ipv6/N", "xff": "xff:K", "header": "header:NAME"}[k]
		if out[i] == "" {
			out[i] = k
		}
	}
	return out
}

// identityKinds are the keys a snippet reads from a request header.
var identityKinds = []string{"user", "account", "tenant", "api-key", "header"}

// snippetHead is the comment every snippet starts with: the spec and key it deploys,
// what the key counts on, and lines of advice, with prefix the product's comment
// marker. The lines after the first two are wrapped at snippetWidth.
func snippetHead(prefix string, s snippetSpec, k snippetKey, countsOn string, lines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s rlsim spec: %s\n", prefix, s.text)
	fmt.Fprintf(&b, "%s rlsim key:  %s\n", prefix, k.text)
	for _, l := range append([]string{"Counts on " + countsOn + "."}, lines...) {
		if l == "" {
			b.WriteString(prefix + "\n")
			continue
		}
		line := prefix
		for _, w := range strings.Fields(l) {
			if len(line)+1+len(w) > snippetWidth && line != prefix {
				b.WriteString(line + "\n")
				line = prefix
			}
			line += " " + w
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// snippetWidth is the widest a snippet's comment lines are wrapped to.
const snippetWidth = 88

// wholeNumber reads a whole number written in digits alone, from least to most.
func wholeNumber(s string, least, most int64) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= least && n <= most
}
