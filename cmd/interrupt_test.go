package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// realRedisClient connects to RLSIM_REDIS_URL, or skips the test.
func realRedisClient(t *testing.T) (string, *redis.Client) {
	t.Helper()
	url := os.Getenv("RLSIM_REDIS_URL")
	if url == "" {
		t.Skip("RLSIM_REDIS_URL not set")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return url, c
}

// keysUnder counts the keys under prefix (SCAN, as rlsim does).
func keysUnder(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	n := 0
	iter := c.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		n++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// interruptInProcess runs rlsim in this process, sends this process sig once keysAt
// says the run has written keys, and returns what rlsim printed and its exit status.
// The test holds the signal too, so that a signal arriving after the run has let go of
// it cannot end the test binary.
func interruptInProcess(t *testing.T, sig syscall.Signal, started func() bool, args ...string) (string, string, int) {
	t.Helper()
	hold := make(chan os.Signal, 4)
	signal.Notify(hold, sig)
	defer signal.Stop(hold)
	type result struct {
		out, errOut string
		code        int
	}
	done := make(chan result, 1)
	go func() {
		var out, errb strings.Builder
		code := Main(args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		done <- result{out.String(), errb.String(), code}
	}()
	if !waitFor(60*time.Second, started) {
		t.Fatal("the run never started writing")
	}
	syscall.Kill(syscall.Getpid(), sig)
	select {
	case r := <-done:
		return r.out, r.errOut, r.code
	case <-time.After(30 * time.Second):
		t.Fatalf("the run did not stop on %s", sig)
	}
	return "", "", 0
}

// rlsim memory interrupted while it loads a million keys on a real server: it stops
// between two round trips, deletes every key it wrote, says so in one line and exits
// 130.
func TestInterruptedMemoryDeletesItsKeys(t *testing.T) {
	url, c := realRedisClient(t)
	prefix := fmt.Sprintf("rlsim-test-interrupt:%d:", time.Now().UnixNano())
	out, errOut, code := interruptInProcess(t, syscall.SIGINT, func() bool { return keysUnder(t, c, prefix) > 1000 },
		"memory", "--redis", url, "--prefix", prefix, "--keys", "1000000", "--load", "1000000", "--algorithms", "fixed-window,sliding-window", "--out", "")
	want := regexp.MustCompile(`^rlsim: interrupted by SIGINT; deleted the \d+ keys it had written under "` + regexp.QuoteMeta(prefix) + `"\n$`)
	if code != 130 || out != "" || !want.MatchString(errOut) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	t.Log(strings.TrimSpace(errOut))
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Fatalf("%d keys left under %s", n, prefix)
	}
}
