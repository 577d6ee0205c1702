#!/usr/bin/env python3
"""A token bucket as a limiter program for `rlsim ... --limiter-exec 'python3 token_bucket.py'`.

rlsim writes one JSON object per request on standard input,

    {"t_ns": 1767261659900000000, "key": "user_8812", "cost": 1,
     "limit": 100, "window_ns": 60000000000, "burst": 100}

(t_ns: nanoseconds of virtual time since the Unix epoch) and reads one answer per request,
in order, on standard output:

    {"allowed": true, "retry_after_ns": 0}

rlsim writes requests ahead of the answers it reads, so a limiter must answer every line
it has read before it waits for more: this one reads whatever has arrived, answers all of
it, and writes the answers in one go.

The bucket repeats, operation for operation, the float arithmetic of rlsim's built-in
token-bucket (algorithms/token_bucket.go, itself x/time/rate's): capacity = burst, refill
limit/window per second, a key starts full, a request of cost c is admitted iff the wait
for its deficit, truncated to whole nanoseconds, is zero and c <= burst, and a refused
request changes nothing. Python's floats are the same IEEE doubles as Go's, so it admits
exactly what the built-in admits.
"""
import json
import os
import sys

NEVER = -1
MAX_DURATION = 2**63 - 1


def seconds(ns):
    """time.Duration(ns).Seconds(): whole seconds plus the nanoseconds over 1e9."""
    sec, nsec = divmod(ns, 1_000_000_000)
    return float(sec) + float(nsec) / 1e9


def duration_from_tokens(tokens, per_sec):
    """The time to refill tokens, truncated to the nanosecond; None when it does not fit."""
    if tokens <= 0:
        return 0
    d = tokens / per_sec * 1e9
    if d > MAX_DURATION:
        return None
    return int(d)


class Buckets:
    def __init__(self):
        self.state = {}  # key -> (last admission in ns, tokens held then)

    def decide(self, now, key, cost, limit, window_ns, burst):
        """Admit or refuse a request; returns (allowed, retry_after_ns)."""
        cost = max(cost, 1)
        full = float(burst)
        per_sec = float(limit) / seconds(window_ns)
        s = self.state.get(key)
        if s is None:
            at, tokens = now, full
        else:
            at = max(now, s[0])  # a request stamped before the key's last admission is decided there
            tokens = min(s[1] + seconds(at - s[0]) * per_sec, full)
        left = tokens - cost
        wait = duration_from_tokens(-left, per_sec) if left < 0 else 0
        if cost <= burst and wait == 0:
            self.state[key] = (at, left)
            return True, 0
        if cost > burst or wait is None:
            return False, NEVER
        return False, self.retry_after(s, now, cost, full, per_sec, (at - now) + wait)

    def retry_after(self, s, now, cost, full, per_sec, estimate):
        """The first time from now at which the request would pass if nothing else is
        admitted: the estimate, or the first nanosecond after it that passes (refill
        counts whole nanoseconds, so the estimate can fall one short)."""
        def ok(d):
            tokens = min(s[1] + seconds(max(now + d - s[0], 0)) * per_sec, full)
            left = tokens - cost
            return left >= 0 or duration_from_tokens(-left, per_sec) == 0

        if ok(estimate):
            return estimate
        lo, hi, stride = estimate, estimate + 1, 1
        while not ok(hi):
            lo, hi, stride = hi, hi + stride, stride * 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if ok(mid):
                hi = mid
            else:
                lo = mid
        return hi


ALLOWED = '{"allowed":true,"retry_after_ns":0}\n'
REFUSED = '{"allowed":false,"retry_after_ns":%d}\n'


def main():
    decide = Buckets().decide
    pending = b""
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            break
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        if not lines:
            continue
        # One parse per chunk: the lines as the elements of one JSON array.
        requests = json.loads(b"[" + b",".join(lines) + b"]")
        out = []
        for r in requests:
            allowed, retry = decide(r["t_ns"], r["key"], r["cost"], r["limit"], r["window_ns"], r["burst"])
            out.append(ALLOWED if allowed else REFUSED % retry)
        sys.stdout.write("".join(out))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
