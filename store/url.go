package store

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrBadURL wraps every error of a Redis URL that cannot name a server: a command line
// that gives one is a bad command line, not a store that failed.
var ErrBadURL = errors.New("bad Redis URL")

// URLError is a Redis URL that cannot name a server: the URL (its password, if any,
// replaced by xxxxx) and why.
type URLError struct {
	URL, Reason string
}

func (e *URLError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("%s: %s", ErrBadURL, e.Reason)
	}
	return fmt.Sprintf("%s %q: %s", ErrBadURL, e.URL, e.Reason)
}

func (e *URLError) Unwrap() error { return ErrBadURL }

// RedactURL is raw with its password, if any, replaced by xxxxx, for messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// ParseURL reads a Redis URL as go-redis does — redis://[user:password@]host[:port][/db],
// rediss:// for TLS, unix:///path/to/socket[?db=N] — and refuses what go-redis would only
// fail on when dialling: an empty URL, another scheme, no host, a port that is not a
// number from 1 to 65535. The error wraps ErrBadURL and never shows a password.
func ParseURL(raw string) (*redis.Options, error) {
	bad := func(format string, args ...any) error {
		return &URLError{URL: RedactURL(raw), Reason: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(raw) == "" {
		return nil, &URLError{Reason: "an empty URL names no server (want redis://host:port/db)"}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("not a URL (want redis://host:port/db)")
	}
	switch u.Scheme {
	case "redis", "rediss":
		host, port := u.Hostname(), u.Port()
		if host == "" {
			return nil, bad("no host (want redis://host:port/db)")
		}
		if port != "" {
			n, err := strconv.Atoi(port)
			if err != nil || n < 1 || n > 65535 {
				return nil, bad("port %q is not a number from 1 to 65535", port)
			}
		}
	case "unix":
		if u.Path == "" {
			return nil, bad("no socket path (want unix:///path/to/redis.sock)")
		}
	case "":
		return nil, bad("no scheme (want redis://host:port/db)")
	default:
		return nil, bad("scheme %q is not redis, rediss or unix", u.Scheme)
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, bad("%s", strings.TrimPrefix(err.Error(), "redis: "))
	}
	return opt, nil
}

// CleanupCommand is the shell command that deletes every key under prefix on the server
// of the Redis URL raw: redis-cli --scan with the prefix as its pattern (glob characters
// escaped, shell-quoted) piped to redis-cli unlink, both with the URL's host, port (or
// socket) and database, and --tls for rediss://. It never carries the password: when the
// URL has one, note says to add it. Both are "" for a URL ParseURL refuses.
func CleanupCommand(raw, prefix string) (command, note string) {
	pattern := escapeGlob(prefix) + "*"
	opt, err := ParseURL(raw)
	if err != nil {
		return "", ""
	}
	var conn []string
	if opt.Network == "unix" {
		conn = append(conn, "-s", shellWord(opt.Addr))
	} else {
		host, port, err := net.SplitHostPort(opt.Addr)
		if err != nil {
			host, port = opt.Addr, "6379"
		}
		conn = append(conn, "-h", shellWord(host), "-p", port)
	}
	if opt.DB != 0 {
		conn = append(conn, "-n", strconv.Itoa(opt.DB))
	}
	if opt.TLSConfig != nil {
		conn = append(conn, "--tls")
	}
	cli := "redis-cli " + strings.Join(conn, " ")
	command = fmt.Sprintf("%s --scan --pattern %s | xargs %s unlink", cli, shellWord(pattern), cli)
	switch {
	case opt.Username != "" && opt.Password != "":
		note = fmt.Sprintf("add --user %s --pass PASSWORD to both redis-cli calls (the URL's password is not printed)", shellWord(opt.Username))
	case opt.Password != "":
		note = "add -a PASSWORD to both redis-cli calls (the URL's password is not printed)"
	}
	return command, note
}

// shellWord quotes s for a POSIX shell when it holds more than plain word characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
