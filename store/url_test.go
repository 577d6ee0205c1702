package store

import (
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
)

// A URL that cannot name a server is refused before any dialling, as a bad URL (a bad
// command line), with what is wrong, and never with its password.
func TestParseURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want string // "" for a good URL
	}{
		{"redis://127.0.0.1:6379/0", ""},
		{"redis://localhost", ""},
		{"rediss://user:secret@cache.example:6380/2", ""},
		{"unix:///run/redis.sock?db=3", ""},
		{"", "an empty URL"},
		{"  ", "an empty URL"},
		{"http://127.0.0.1:6379", `scheme "http" is not redis, rediss or unix`},
		{"redis://127.0.0.1:99999", `port "99999" is not a number from 1 to 65535`},
		{"redis://127.0.0.1:0", `port "0"`},
		{"redis://:6379", "no host"},
		{"127.0.0.1:6379", "want redis://host:port/db"},
		{"redis://127.0.0.1:6379/abc", "invalid database number"},
		{"redis://:hunter2@127.0.0.1:99999", `"redis://:xxxxx@127.0.0.1:99999"`},
		{"unix://", "no socket path"},
	} {
		_, err := ParseURL(tc.url)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.url, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an ErrBadURL saying %q", tc.url, err, tc.want)
		case err != nil && strings.Contains(err.Error(), "hunter2"):
			t.Errorf("%q: the error shows the password: %v", tc.url, err)
		}
	}
}

// The cleanup command carries the URL's host, port and database (or socket, and TLS), and
// says to add the password without ever printing it.
func TestCleanupCommand(t *testing.T) {
	for _, tc := range []struct {
		url, prefix, cmd, note string
	}{
		{"redis://10.1.2.3:6380/4", "rlsim:x:", `redis-cli -h 10.1.2.3 -p 6380 -n 4 --scan --pattern 'rlsim:x:*' | xargs redis-cli -h 10.1.2.3 -p 6380 -n 4 unlink`, ""},
		{"redis://localhost", "p:", `redis-cli -h localhost -p 6379 --scan --pattern 'p:*' | xargs redis-cli -h localhost -p 6379 unlink`, ""},
		{"redis://:hunter2@10.0.0.1:7000/1", "p:", "redis-cli -h 10.0.0.1 -p 7000 -n 1 --scan", "add -a PASSWORD"},
		{"rediss://ops:hunter2@cache:6380", "p:", "redis-cli -h cache -p 6380 --tls --scan", "add --user ops --pass PASSWORD"},
		{"unix:///run/redis.sock?db=2", "p:", "redis-cli -s /run/redis.sock -n 2 --scan", ""},
		{"redis://h:1/0", "a*b'[c]:", `--pattern 'a\*b'\''\[c\]:*'`, ""},
	} {
		cmd, note := CleanupCommand(tc.url, tc.prefix)
		if !strings.Contains(cmd, tc.cmd) || !strings.Contains(note, tc.note) || (tc.note == "") != (note == "") {
			t.Errorf("%q: %q (%q), want %q (%q)", tc.url, cmd, note, tc.cmd, tc.note)
		}
		if strings.Contains(cmd+note, "hunter2") {
			t.Errorf("%q: the password is printed: %q %q", tc.url, cmd, note)
		}
	}
	if cmd, _ := CleanupCommand("http://x", "p:"); cmd != "" {
		t.Errorf("a bad URL has a cleanup command: %q", cmd)
	}
}

// The printed command, run by a shell against the real server on another database than 0,
// deletes the prefix's keys there and nothing on database 0.
func TestCleanupCommandOnRealRedis(t *testing.T) {
	base := getRedisURL()
	if base == "" {
		t.Skip("RLSIM_REDIS_URL not set: no real Redis to run against")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/5"
	other, err := NewRedis(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	zero := realRedis(t)
	prefix := testPrefix(t, 1)
	ctx := t.Context()
	for _, r := range []*Redis{other, zero} {
		for _, k := range []string{prefix + "a", prefix + "b*c"} {
			if err := r.client.Set(ctx, k, 1, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer zero.Delete(prefix+"a", prefix+"b*c")
	cmd, _ := CleanupCommand(u.String(), prefix)
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", cmd, err, out)
	}
	if keys, _ := other.Keys(prefix); len(keys) != 0 {
		t.Errorf("%s left %d keys on database 5", cmd, len(keys))
	}
	if keys, _ := zero.Keys(prefix); len(keys) != 2 {
		t.Errorf("%s touched database 0: %d of 2 keys left", cmd, len(keys))
	}
}
