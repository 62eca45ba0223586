// ioredis (Node.js) against kvlab-server: multi() transactions, queuing errors, WATCH,
// pipelines, BLPOP across connections, custom Lua commands (EVALSHA with the EVAL fallback), and
// two concurrency invariants — WATCH-based increments from several clients end exact, and bank
// transfers in multi() keep the total that MGET auditors read — under both --atomicity schemes.
//
// Usage: node ioredis_test.js KVLAB_SERVER
// ioredis comes from npm (.ci/run installs it into /var/cache/kvlab-node; KVLAB_NODE_MODULES
// overrides). Exit 77 (skip) when node or ioredis is not installed.
'use strict';

const { spawn } = require('child_process');
const net = require('net');
const path = require('path');

let Redis;
try {
  const dir = process.env.KVLAB_NODE_MODULES || '/var/cache/kvlab-node/node_modules';
  Redis = require(path.join(dir, 'ioredis'));
} catch (e) {
  console.log('skipped: ioredis is not installed (npm install --prefix /var/cache/kvlab-node ioredis@5)');
  process.exit(77);
}

const failures = [];
let checks = 0;
function check(cond, what) {
  checks += 1;
  console.log((cond ? 'ok   ' : 'FAIL ') + what);
  if (!cond) failures.push(what);
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function startServer(binary, atomicity) {
  const port = await freePort();
  const proc = spawn(binary, ['--port', String(port), '--threads', '2', '--atomicity', atomicity],
                     { stdio: 'ignore' });
  const deadline = Date.now() + 10000;
  while (Date.now() < deadline) {
    const up = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
      c.on('error', () => resolve(false));
    });
    if (up) return { proc, port };
    await sleep(50);
  }
  proc.kill('SIGKILL');
  throw new Error('kvlab-server did not start');
}

function client(port) {
  // No reconnection and no offline queue: a server that drops us fails the test, not a retry.
  return new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 0,
                     enableOfflineQueue: true, retryStrategy: () => null });
}

async function semantics(port, label) {
  const r = client(port);
  const other = client(port);
  try {
    await r.flushall();
    let res = await r.multi().set('a', '1').incr('a').get('a').exec();
    check(eq(res, [[null, 'OK'], [null, 2], [null, '2']]), `${label}: multi() runs MULTI/EXEC`);

    let err = null;
    try {
      await r.multi().set('b', '1').call('nosuchcommand').get('b').exec();
    } catch (e) {
      err = e;
    }
    check(err !== null && /EXECABORT/.test(String(err.message)),
          `${label}: a queuing error aborts EXEC with EXECABORT`);
    check((await r.exists('b')) === 0, `${label}: nothing of the aborted transaction ran`);

    res = await r.multi().set('s', 'x').incr('s').set('t', 'y').exec();
    check(res[0][1] === 'OK' && res[1][0] instanceof Error &&
          /not an integer/.test(res[1][0].message) && res[2][1] === 'OK',
          `${label}: a runtime error inside EXEC does not roll back`);

    await r.set('w', '1');
    await r.watch('w');
    await other.set('w', '2');
    res = await r.multi().set('w', '3').exec();
    check(res === null, `${label}: EXEC after another client changed a WATCHed key answers null`);
    check((await r.get('w')) === '2', `${label}: the aborted transaction did not write`);

    res = await r.pipeline().set('p', 'v').get('p').del('p').exec();
    check(eq(res, [[null, 'OK'], [null, 'v'], [null, 1]]), `${label}: pipeline() without MULTI`);

    const waiting = other.blpop('jobs', 5);
    await sleep(100);
    await r.rpush('jobs', 'j1');
    check(eq(await waiting, ['jobs', 'j1']), `${label}: BLPOP wakes on another connection's RPUSH`);

    r.defineCommand('incrtwice', {
      numberOfKeys: 1,
      lua: "redis.call('INCR', KEYS[1]); return redis.call('INCR', KEYS[1])",
    });
    await r.script('FLUSH');
    check((await r.incrtwice('lua')) === 2 && (await r.incrtwice('lua')) === 4,
          `${label}: a custom Lua command (EVALSHA, EVAL after NOSCRIPT)`);
  } finally {
    r.disconnect();
    other.disconnect();
  }
}

// Clients increment one counter with WATCH/GET/MULTI/SET/EXEC, retrying on null: the final count
// is exact when EXEC is atomic with respect to the WATCH check.
async function watchIncrements(port, label) {
  const clients = 4;
  const each = 40;
  const setup = client(port);
  await setup.set('counter', '0');
  const workers = [];
  for (let c = 0; c < clients; ++c) {
    workers.push((async () => {
      const r = client(port);
      let retries = 0;
      for (let i = 0; i < each; ++i) {
        for (;;) {
          await r.watch('counter');
          const v = Number(await r.get('counter'));
          const res = await r.multi().set('counter', String(v + 1)).exec();
          if (res !== null) break;
          retries += 1;
          if (retries > 100000) throw new Error('no progress');
        }
      }
      r.disconnect();
      return retries;
    })());
  }
  const retries = (await Promise.all(workers)).reduce((a, b) => a + b, 0);
  const final = Number(await setup.get('counter'));
  setup.disconnect();
  check(final === clients * each,
        `${label}: WATCH increments from ${clients} clients end at ${final} (want ${clients * each}; ${retries} retries)`);
}

// Transfers between 20 accounts in multi() (DECRBY a, INCRBY b) while auditors read every account
// with one MGET: every audit sees the initial total.
async function transfers(port, label) {
  const accounts = 20;
  const keys = Array.from({ length: accounts }, (_, i) => `acct:{bank}:${i}`);
  const setup = client(port);
  await setup.mset(...keys.flatMap((k) => [k, '100']));
  const total = 100 * accounts;
  let stop = false;
  let audits = 0;
  let bad = 0;
  const auditors = [0, 1].map(async () => {
    const r = client(port);
    while (!stop) {
      const vals = await r.mget(...keys);
      const sum = vals.reduce((a, v) => a + Number(v), 0);
      audits += 1;
      if (sum !== total) bad += 1;
    }
    r.disconnect();
  });
  const movers = [0, 1, 2].map(async (seed) => {
    const r = client(port);
    let x = seed * 7919 + 1;
    for (let i = 0; i < 300; ++i) {
      x = (x * 1103515245 + 12345) % 2147483648;
      const a = keys[x % accounts];
      const b = keys[(x >> 8) % accounts];
      const amount = 1 + (x % 9);
      await r.multi().decrby(a, amount).incrby(b, amount).exec();
    }
    r.disconnect();
  });
  await Promise.all(movers);
  stop = true;
  await Promise.all(auditors);
  const vals = await setup.mget(...keys);
  const sum = vals.reduce((a, v) => a + Number(v), 0);
  setup.disconnect();
  check(bad === 0 && sum === total && audits > 0,
        `${label}: ${audits} MGET audits during multi() transfers all saw the total (${bad} did not; final ${sum})`);
}

async function main() {
  const binary = process.argv[2];
  if (!binary) {
    console.log('usage: node ioredis_test.js KVLAB_SERVER');
    process.exit(2);
  }
  for (const scheme of ['key-locks', 'global', 'stripes']) {
    const { proc, port } = await startServer(binary, scheme);
    try {
      await semantics(port, scheme);
      await watchIncrements(port, scheme);
      await transfers(port, scheme);
    } catch (e) {
      check(false, `${scheme}: ${e.stack || e}`);
    } finally {
      proc.kill('SIGTERM');
    }
  }
  console.log(`${checks - failures.length} of ${checks} checks passed`);
  process.exit(failures.length ? 1 : 0);
}

const guard = setTimeout(() => {
  console.log('FAIL: the test did not finish in 90 s');
  process.exit(1);
}, 90000);
guard.unref();
main();
