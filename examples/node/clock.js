'use strict';
// The virtual clock and the JSON-lines loop shared by the example limiter programs.
//
// rlsim writes one JSON object per request on standard input,
//
//   {"t_ns":1767261659900000000,"key":"user_8812","cost":1,"limit":100,"window_ns":60000000000,"burst":100}
//
// and reads one answer per request, in order, on standard output:
//
//   {"allowed":true,"retry_after_ns":0}
//
// The library under test must see rlsim's time, not the machine's. Requiring this module
// replaces Date.now with the time of the request being decided, in whole milliseconds (what
// Date.now() returns), and setTimeout, setInterval and their clear functions with timers on
// that clock: a timer fires when the virtual time reaches it, before the first request at or
// after its due time. A timer never fires from a step back in time: timers go by the latest
// time seen. Node's own I/O does not use these globals, so stdin and stdout are unaffected.
//
// t_ns does not fit a JavaScript number exactly (2^53 < 1.7e18), so it is read from the raw
// line as a BigInt: a millisecond boundary is never misread.

const MS = 1000000n;

let nowMs = 0; // Date.now() as the library sees it
let timersAt = -Infinity; // the latest virtual time seen, in ms: what timers go by
let nextId = 1;
const timers = new Map(); // id -> {id, due, delay, fn, args, every}: the timers armed
const heap = []; // [due, id] of every arming, soonest first; stale entries are skipped

Date.now = () => nowMs;

function before(a, b) {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

function push(entry) {
  heap.push(entry);
  for (let i = heap.length - 1; i > 0; ) {
    const up = (i - 1) >> 1;
    if (!before(heap[i], heap[up])) break;
    [heap[i], heap[up]] = [heap[up], heap[i]];
    i = up;
  }
}

function pop() {
  const top = heap[0];
  const last = heap.pop();
  if (heap.length > 0) {
    heap[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l], heap[m])) m = l;
      if (r < heap.length && before(heap[r], heap[m])) m = r;
      if (m === i) break;
      [heap[i], heap[m]] = [heap[m], heap[i]];
      i = m;
    }
  }
  return top;
}

function arm(t) {
  timers.set(t.id, t);
  push([t.due, t.id]);
}

class Timeout {
  constructor(id) {
    this.id = id;
  }
  unref() {
    return this;
  }
  ref() {
    return this;
  }
  hasRef() {
    return false;
  }
  refresh() {
    const t = timers.get(this.id);
    if (t) {
      t.due = nowMs + t.delay;
      arm(t);
    }
    return this;
  }
  [Symbol.toPrimitive]() {
    return this.id;
  }
}

function schedule(fn, delay, args, every) {
  delay = Number(delay);
  if (!(delay >= 1 && delay <= 2147483647)) delay = 1; // as Node coerces it
  const t = { id: nextId++, due: nowMs + delay, delay, fn, args, every };
  arm(t);
  return new Timeout(t.id);
}

function cancel(handle) {
  if (handle != null) timers.delete(typeof handle === 'object' ? handle.id : Number(handle));
}

globalThis.setTimeout = (fn, delay, ...args) => schedule(fn, delay, args, false);
globalThis.setInterval = (fn, delay, ...args) => schedule(fn, delay, args, true);
globalThis.clearTimeout = cancel;
globalThis.clearInterval = cancel;

// fireDue runs, in order of due time and then of creation, every timer due by ms.
function fireDue(ms) {
  while (heap.length > 0 && heap[0][0] <= ms) {
    const [due, id] = pop();
    const t = timers.get(id);
    if (t === undefined || t.due !== due) continue; // cleared, or re-armed since
    const saved = nowMs;
    nowMs = due;
    if (t.every) {
      t.due += t.delay;
      push([t.due, t.id]);
    } else {
      timers.delete(id);
    }
    try {
      t.fn(...t.args);
    } finally {
      nowMs = saved;
    }
  }
}

// floorDiv is ⌊a/b⌋ for BigInts, rounding toward minus infinity.
function floorDiv(a, b) {
  const q = a / b;
  return a % b < 0n ? q - 1n : q;
}

const int = (line, field) => {
  const m = new RegExp(`"${field}":(-?\\d+)`).exec(line);
  if (!m) throw new Error(`no integer ${field} in ${JSON.stringify(line)}`);
  return BigInt(m[1]);
};

// Request is one line of input: t_ns, window_ns as BigInts; cost, limit, burst as numbers.
function parse(line) {
  const r = JSON.parse(line);
  return {
    tNs: int(line, 't_ns'),
    key: String(r.key),
    cost: r.cost,
    limit: r.limit,
    windowNs: int(line, 'window_ns'),
    burst: r.burst,
  };
}

// params reads "name=value" words (the spec's parameters) from the command line.
function params(argv) {
  const out = {};
  for (const word of argv) {
    for (const kv of word.split(/\s+/).filter(Boolean)) {
      const [k, v] = kv.split('=');
      if (v === undefined || v === '') throw new Error(`want name=value, got ${JSON.stringify(kv)}`);
      out[k] = Number(v);
      if (!Number.isFinite(out[k])) throw new Error(`${k}: want a number, got ${JSON.stringify(v)}`);
    }
  }
  return out;
}

// serve answers every request on stdin with decide(request), which resolves to
// {allowed, resetMs} (resetMs: when a refused request could pass, in ms of the virtual
// clock; null: never). Requests are decided one at a time, in order; the answers to a
// chunk of input are written together once it has been decided.
function serve(decide) {
  let pending = '';
  let queue = Promise.resolve();
  const fail = (err) => {
    process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  };
  const answer = async (lines) => {
    const out = [];
    for (const line of lines) {
      if (line.trim() === '') continue;
      const r = parse(line);
      const ms = floorDiv(r.tNs, MS);
      const msNum = Number(ms);
      if (msNum > timersAt) {
        timersAt = msNum;
        fireDue(timersAt);
      }
      nowMs = msNum;
      const d = await decide(r);
      if (d.allowed) {
        out.push('{"allowed":true,"retry_after_ns":0}\n');
      } else if (d.resetMs === null) {
        out.push('{"allowed":false,"retry_after_ns":-1}\n');
      } else {
        let wait = BigInt(d.resetMs) * MS - r.tNs;
        if (wait < 1n) wait = 1n;
        out.push(`{"allowed":false,"retry_after_ns":${wait}}\n`);
      }
    }
    if (out.length > 0) process.stdout.write(out.join(''));
  };
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk) => {
    const lines = (pending + chunk).split('\n');
    pending = lines.pop();
    queue = queue.then(() => answer(lines)).catch(fail);
  });
  process.stdin.on('end', () => {
    queue = queue.then(() => answer([pending])).catch(fail);
  });
}

module.exports = { serve, params };
