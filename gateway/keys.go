package gateway

import (
	"strconv"
	"strings"
	"time"
)

// headerKeys maps request headers that carry an identity onto rlsim's key of that
// identity. rlsim's requests carry identities, not headers, so a header named nowhere
// here has no key.
var headerKeys = map[string]string{
	"x-api-key":    "api-key",
	"api-key":      "api-key",
	"apikey":       "api-key",
	"x-apikey":     "api-key",
	"x-user":       "user",
	"x-user-id":    "user",
	"x-userid":     "user",
	"x-username":   "user",
	"x-tenant":     "tenant",
	"x-tenant-id":  "tenant",
	"x-account":    "account",
	"x-account-id": "account",
}

// headerKey is the key of a limit that counts on the request header name (any case, '_'
// for '-' as nginx's variables write it), and whether rlsim has one.
func headerKey(name string) (string, bool) {
	k, ok := headerKeys[strings.ReplaceAll(strings.ToLower(name), "_", "-")]
	return k, ok
}

// headerKeyList is the headers headerKey knows, for warnings.
const headerKeyList = "X-Api-Key, X-User(-Id), X-Tenant(-Id), X-Account(-Id)"

// formatDuration writes d as a model spec writes a duration: its largest whole unit
// ("1m", "10s", "250ms"), else Go's form.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	}
	return d.String()
}

// formatNumber writes a configuration's number as a spec writes it: a whole number
// without a decimal point.
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}
