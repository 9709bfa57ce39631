// The lab's client, as the seeds' SvelteKit SSR server fetched its API:
// undici fetch over keep-alive connections, one retry on a connection error.
//
// - open-loop Poisson arrivals at --rps (fleet-wide), from a seeded RNG;
// - round-robin over the instances, and within an instance round-robin over
//   --conns undici Clients of one connection each (pipelining 1), so the
//   instance's workers each hold some of the connections (the kernel hands a
//   new connection to whichever worker accepts it);
// - a request that fails with a connection error (reset, closed socket,
//   refused) is retried once on the same instance: success logs `retry_ok`,
//   failure logs `fetch_failed` (the seeds' Sentry "TypeError: fetch failed");
// - canary lines are JSON Lines {"ts": Unix seconds, "event": ...} that
//   `fleetsim replay` reads; a summary line (event "client_summary") ends the file.
//
// usage: node canary.mjs --target A=http://127.0.0.1:8001 --target B=... \
//          --rps 90 --seconds 300 --seed 1 --conns 16 --out canary.jsonl
import { Client, fetch } from 'undici';
import { openSync, writeSync, closeSync } from 'node:fs';

function parseArgs(argv) {
  const a = { target: [], rps: 50, seconds: 60, seed: 1, conns: 16, out: 'canary.jsonl',
              keepAliveTimeoutMs: 4000, timeoutMs: 10000 };
  for (let i = 2; i < argv.length; i++) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[++i];
    if (v === undefined) throw new Error(`--${k} needs a value`);
    if (k === 'target') a.target.push(v);
    else if (k in a) a[k] = (k === 'out') ? v : Number(v);
    else throw new Error(`unknown option --${k}`);
  }
  if (!a.target.length) throw new Error('at least one --target NAME=URL');
  for (const k of ['rps', 'seconds', 'conns']) {
    if (!(a[k] > 0)) throw new Error(`--${k} must be > 0, got ${a[k]}`);
  }
  return a;
}

// mulberry32: a small seeded RNG for the arrival process.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CONNECTION_ERRORS = new Set([
  'ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ECONNABORTED',
  'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'UND_ERR_CONNECT_TIMEOUT',
]);

function connectionError(err) {
  const c = err && err.cause;
  return !!(c && (CONNECTION_ERRORS.has(c.code) || CONNECTION_ERRORS.has(c.errno)));
}

function describe(err) {
  const c = err && err.cause;
  return `${err && err.name}: ${err && err.message}` + (c ? ` (${c.code || ''} ${c.message || ''})` : '');
}

const args = parseArgs(process.argv);
const out = openSync(args.out, 'a');
const log = (row) => writeSync(out, JSON.stringify(row) + '\n');
const now = () => Date.now() / 1000;

const instances = args.target.map((t) => {
  const [name, url] = t.split('=');
  if (!name || !url) throw new Error(`--target ${t}: expected NAME=URL`);
  const clients = [];
  for (let i = 0; i < args.conns; i++) {
    clients.push(new Client(url, { pipelining: 1, keepAliveTimeout: args.keepAliveTimeoutMs }));
  }
  return { name, url, clients, next: 0 };
});

const counts = { sent: 0, ok: 0, http_error: 0, retry_ok: 0, fetch_failed: 0, other_error: 0 };
const perInstance = Object.fromEntries(instances.map((i) => [i.name, 0]));
let rr = 0;
let inFlight = 0;

async function once(inst, client) {
  const res = await fetch(inst.url + '/', { dispatcher: client,
                                            signal: AbortSignal.timeout(args.timeoutMs) });
  await res.arrayBuffer();
  return res.status;
}

async function request() {
  const inst = instances[rr++ % instances.length];
  const client = inst.clients[inst.next++ % inst.clients.length];
  counts.sent++;
  perInstance[inst.name]++;
  inFlight++;
  try {
    let status;
    try {
      status = await once(inst, client);
    } catch (err) {
      if (!connectionError(err)) throw err;
      const first = describe(err);
      try {
        status = await once(inst, client);   // the single retry
      } catch (err2) {
        counts.fetch_failed++;
        log({ ts: now(), event: 'fetch_failed', instance: inst.name,
              error: 'TypeError: fetch failed', first, retry: describe(err2) });
        return;
      }
      counts.retry_ok++;
      log({ ts: now(), event: 'retry_ok', instance: inst.name, first });
    }
    if (status >= 200 && status < 300) counts.ok++; else counts.http_error++;
  } catch (err) {
    counts.other_error++;
    log({ ts: now(), event: 'client_error', instance: inst.name, error: describe(err) });
  } finally {
    inFlight--;
  }
}

const rand = rng(args.seed);
const start = performance.now();
const end = start + args.seconds * 1000;
let next = start;
log({ ts: now(), event: 'client_start', rps: args.rps, seconds: args.seconds,
      seed: args.seed, conns_per_instance: args.conns, instances: instances.map((i) => i.name) });

// Open loop: arrivals do not wait for responses.
await new Promise((resolve) => {
  const tick = () => {
    const t = performance.now();
    while (next <= t && next < end) {
      request();
      next += (-Math.log(1 - rand()) / args.rps) * 1000;
    }
    if (next >= end) return resolve();
    setTimeout(tick, Math.max(0, next - performance.now()));
  };
  tick();
});
const drainBy = performance.now() + args.timeoutMs + 1000;
while (inFlight > 0 && performance.now() < drainBy) await new Promise((r) => setTimeout(r, 20));
log({ ts: now(), event: 'client_summary', ...counts, per_instance: perInstance,
      in_flight_at_end: inFlight });
closeSync(out);
await Promise.all(instances.flatMap((i) => i.clients.map((c) => c.close().catch(() => {}))));
process.exit(0);
