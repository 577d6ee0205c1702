#!/usr/bin/env node
'use strict';
// rate-limiter-flexible's RateLimiterMemory, as a limiter program for
//
//   rlsim compare --limiter-exec 'node examples/node/rate_limiter_flexible.js [points=N duration=S blockDuration=S]'
//
// run on rlsim's virtual clock (see clock.js). Without points and duration it takes them
// from each request's policy (limit, window_ns). A request of cost c is consume(key, c), as
// in rlsim's model (rate-limiter-flexible:points=… duration=…). Install the library first:
// npm ci --prefix examples/node.
const { serve, params } = require('./clock');
const { RateLimiterMemory, RateLimiterRes } = require('rate-limiter-flexible');

const given = params(process.argv.slice(2));
const limiters = new Map(); // "points duration blockDuration" -> limiter

function limiterFor(r) {
  const points = given.points ?? r.limit;
  const duration = given.duration ?? Number(r.windowNs / 1000000n) / 1000;
  const blockDuration = given.blockDuration ?? 0;
  const id = `${points} ${duration} ${blockDuration}`;
  let lim = limiters.get(id);
  if (lim === undefined) {
    lim = new RateLimiterMemory({ points, duration, blockDuration });
    limiters.set(id, lim);
  }
  return lim;
}

serve(async (r) => {
  const lim = limiterFor(r);
  const cost = Math.max(r.cost, 1);
  try {
    await lim.consume(r.key, cost);
    return { allowed: true };
  } catch (res) {
    if (!(res instanceof RateLimiterRes)) throw res;
    if (cost > lim.points || res.msBeforeNext < 0) return { allowed: false, resetMs: null };
    return { allowed: false, resetMs: Date.now() + res.msBeforeNext };
  }
});
