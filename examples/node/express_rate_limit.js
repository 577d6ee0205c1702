#!/usr/bin/env node
'use strict';
// express-rate-limit's middleware over its MemoryStore, as a limiter program for
//
//   rlsim compare --limiter-exec 'node examples/node/express_rate_limit.js [windowMs=N limit=N]'
//
// run on rlsim's virtual clock (see clock.js). Without parameters it takes windowMs and
// limit from each request's policy (window_ns, limit). Each request is one call of the
// middleware with a request whose key is rlsim's; a request of cost c is c calls at the same
// instant, admitted when every one of them is, which is how rlsim's model
// (express-rate-limit:windowMs=… limit=…) counts a cost. Install the library first:
// npm ci --prefix examples/node.
const { serve, params } = require('./clock');
const { rateLimit } = require('express-rate-limit');

const given = params(process.argv.slice(2));
const limiters = new Map(); // "windowMs limit" -> middleware

function limiterFor(r) {
  const windowMs = given.windowMs ?? Number(r.windowNs / 1000000n);
  const limit = given.limit ?? r.limit;
  const id = `${windowMs} ${limit}`;
  let mw = limiters.get(id);
  if (mw === undefined) {
    mw = rateLimit({
      windowMs,
      limit,
      keyGenerator: (req) => req.rlsimKey,
      // The handler only records the refusal; the library's headers and validations
      // change no decision, and its checks of a real request's IP have none here.
      handler: (req) => {
        req.rlsimRefused = true;
      },
      legacyHeaders: false,
      standardHeaders: false,
      validate: false,
    });
    limiters.set(id, mw);
  }
  return mw;
}

const response = {
  headersSent: false,
  writableEnded: false,
  setHeader() {},
  status() {
    return this;
  },
  send() {},
};

async function hit(mw, key) {
  const req = { rlsimKey: key, ip: '127.0.0.1' };
  let passed = false;
  await mw(req, response, (err) => {
    if (err) throw err;
    passed = true;
  });
  return { passed, info: req.rateLimit };
}

serve(async (r) => {
  const mw = limiterFor(r);
  let allowed = true;
  let info;
  for (let i = 0; i < Math.max(r.cost, 1); i++) {
    const h = await hit(mw, r.key);
    allowed = allowed && h.passed;
    info = h.info;
  }
  const cost = Math.max(r.cost, 1);
  if (allowed) return { allowed };
  return { allowed, resetMs: cost > info.limit ? null : info.resetTime.getTime() };
});
