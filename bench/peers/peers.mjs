// One timed run of one system against the peers' PostgreSQL cluster; run.sh calls it once per
// system and round. It prints what it does and, last, one line
//   RESULT <system> <round> <jobs> <seconds> <jobs/s> <db cpu us/job> <client cpu us/job>
// that run.sh collects for its summary.
//
//   node peers.mjs pg-boss|graphile-worker|ingestd --jobs N --round R
//
// Environment (run.sh sets it):
//   PEERS_DATABASE_URL      the cluster's database, e.g. postgresql://ingestd@127.0.0.1:55433/ingestd
//   PEERS_POSTMASTER_PID    the cluster's postmaster: its CPU and its children's is the database's
//   PEERS_BENCH_BINARY      ingestd's bench_orchestration (for ingestd only)
//   PEERS_BENCH_ARGS        more of its options, separated by spaces
//   PEERS_LOG_DIR           where the ingestd binary's own log goes
//
// Database CPU: utime + stime (/proc/PID/stat fields 14 and 15) of the postmaster and of every
// process whose parent it is, plus the postmaster's cutime + cstime (fields 16 and 17: backends
// that ended during the run), read just before and just after the timed part.
import { readdirSync, readFileSync, openSync, closeSync, statSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import pg from 'pg';

const STALL_MS = 60_000; // a timed part that makes no progress this long fails
const INSERT_CHUNK = 1000; // jobs per bulk insert (untimed)

const [system, ...rest] = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 && i + 1 < rest.length ? rest[i + 1] : fallback;
};
const jobs = Number(opt('jobs', '20000'));
const round = Number(opt('round', '1'));
const url = process.env.PEERS_DATABASE_URL;
const postmasterPid = Number(process.env.PEERS_POSTMASTER_PID);
const clockTicks = Number(process.env.PEERS_CLK_TCK || 100);

function fail(message) {
  console.error(`peers: ${system} round ${round}: ${message}`);
  process.exit(1);
}

if (!Number.isInteger(jobs) || jobs < 1) fail(`--jobs must be a positive integer, not ${opt('jobs')}`);
if (!url) fail('PEERS_DATABASE_URL is not set (run bench/peers/run.sh)');
if (!Number.isInteger(postmasterPid) || postmasterPid <= 1) fail('PEERS_POSTMASTER_PID is not set');

/** Clock ticks of CPU the cluster has used so far (see the header). */
function clusterCpuTicks() {
  let total = 0;
  let sawPostmaster = false;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ')'.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[0] is field 3
    const pid = Number(name);
    const ppid = Number(f[1]);
    if (pid !== postmasterPid && ppid !== postmasterPid) continue;
    total += Number(f[11]) + Number(f[12]); // utime, stime
    if (pid === postmasterPid) {
      sawPostmaster = true;
      total += Number(f[13]) + Number(f[14]); // cutime, cstime
    }
  }
  if (!sawPostmaster) fail(`the cluster's postmaster (pid ${postmasterPid}) is not running`);
  return total;
}

/** The machine's CPU ticks so far, all cores: [busy, idle] (/proc/stat's first line). */
function machineTicks() {
  const [, user, nice, sys, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .trim()
    .split(/\s+/)
    .map(Number);
  return [user + nice + sys + irq + softirq + steal, idle + iowait];
}

/** utime + stime of one process, in clock ticks (0 once it has ended). */
function processTicks(pid) {
  try {
    const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return 0;
  }
}

/**
 * A snapshot at the start of a timed part; .end() answers its figures. The client is this process,
 * or the process `clientPid` when given; "others" is the share of the machine's CPU that neither
 * the cluster nor the client nor this process used meanwhile (other work skews the figures).
 */
function startTiming(clientPid) {
  const t0 = process.hrtime.bigint();
  const db0 = clusterCpuTicks();
  const own0 = process.cpuUsage();
  const client0 = clientPid ? processTicks(clientPid) : 0;
  const [busy0, idle0] = machineTicks();
  return {
    end(done) {
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const dbTicks = clusterCpuTicks() - db0;
      const own = process.cpuUsage(own0);
      const ownUs = own.user + own.system;
      const clientTicks = clientPid ? processTicks(clientPid) - client0 : 0;
      const [busy1, idle1] = machineTicks();
      const busy = busy1 - busy0;
      const others = Math.max(0, busy - dbTicks - clientTicks - (ownUs / 1e6) * clockTicks);
      return {
        done,
        seconds,
        rate: done / seconds,
        dbUsPerJob: ((dbTicks / clockTicks) * 1e6) / done,
        clientUsPerJob: (clientPid ? (clientTicks / clockTicks) * 1e6 : ownUs) / done,
        othersPct: (100 * others) / Math.max(1, busy + (idle1 - idle0)),
      };
    },
  };
}

async function withClient(fn) {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000, statement_timeout: 120_000 });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const sql = (text, params) => withClient((c) => c.query(text, params));

/** Writes dirty pages out before a timed part, so that no run starts with another's to flush. */
const checkpoint = () => sql('CHECKPOINT');

/**
 * Resolves when done() reaches `target`; rejects when it has not moved for STALL_MS, or when
 * failed() is called.
 */
function progressWatch(target, what) {
  let count = 0;
  let last = Date.now();
  let settle;
  const finished = new Promise((resolve, reject) => {
    settle = { resolve, reject };
  });
  const timer = setInterval(() => {
    if (Date.now() - last > STALL_MS)
      settle.reject(new Error(`no ${what} for ${STALL_MS / 1000} s (${count} of ${target} done)`));
  }, 1000);
  finished.finally(() => clearInterval(timer)).catch(() => {});
  return {
    finished,
    get count() {
      return count;
    },
    done(n) {
      count += n;
      last = Date.now();
      if (count >= target) settle.resolve();
    },
    failed(err) {
      settle.reject(err);
    },
  };
}

/** `promise`, or a rejection naming `what` after `ms`. */
function deadline(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Waits until check() is true, polling every `everyMs`; throws after `deadlineMs`. */
async function pollUntil(check, what, everyMs = 20, deadlineMs = STALL_MS) {
  const until = Date.now() + deadlineMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`${what}: not after ${deadlineMs / 1000} s`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

function report(r, note) {
  console.log(
    `  ${system} round ${round}: ${r.done} jobs in ${r.seconds.toFixed(2)} s = ${Math.round(r.rate)} jobs/s; ` +
      `database CPU ${Math.round(r.dbUsPerJob)} us/job; client CPU ${Math.round(r.clientUsPerJob)} us/job; ` +
      `other work meanwhile ${Math.round(r.othersPct)}% of the machine${note ?? ''}`,
  );
  console.log(
    ['RESULT', system, round, r.done, r.seconds.toFixed(3), r.rate.toFixed(1), r.dbUsPerJob.toFixed(1),
      r.clientUsPerJob.toFixed(1), r.othersPct.toFixed(0)].join('\t'),
  );
}

// ---------------------------------------------------------------------------------------------
// pg-boss: N no-op jobs inserted in bulk, then consumed by LOOPS concurrent fetch/complete loops
// of BATCH jobs each.
const PGBOSS_LOOPS = 4;
const PGBOSS_BATCH = 100;

async function runPgBoss() {
  const { PgBoss } = await import('pg-boss');
  const schema = `peers_pgboss_r${round}`;
  const queue = 'noop';
  await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const boss = new PgBoss({ connectionString: url, schema, application_name: 'peers-pg-boss' });
  let bossError = null;
  boss.on('error', (err) => {
    bossError ??= err;
    console.error(`  pg-boss error: ${err.message}`);
  });
  await boss.start();
  await boss.createQueue(queue);
  for (let i = 0; i < jobs; i += INSERT_CHUNK) {
    const n = Math.min(INSERT_CHUNK, jobs - i);
    await boss.insert(queue, Array.from({ length: n }, (_, k) => ({ data: { n: i + k } })));
  }
  // The jobs by state, from the table (getQueue()'s counts are the monitor's, refreshed now and then).
  const states = async () => {
    const { rows } = await sql(`SELECT state::text, count(*)::int AS n FROM ${schema}.job WHERE name = $1 GROUP BY 1`, [queue]);
    return Object.fromEntries(rows.map((row) => [row.state, row.n]));
  };
  const before = await states();
  if ((before.created ?? 0) !== jobs) fail(`jobs by state before the run: ${JSON.stringify(before)}, expected ${jobs} created`);
  await checkpoint();
  console.log(
    `  pg-boss schema ${schema}: ${jobs} jobs queued; ${PGBOSS_LOOPS} loops of ` +
      `fetch(batchSize ${PGBOSS_BATCH}) + complete(ids)`,
  );

  const watch = progressWatch(jobs, 'pg-boss job completed');
  let fetched = 0;
  let affected = 0;
  const loop = async () => {
    for (;;) {
      if (bossError) throw bossError;
      const batch = await boss.fetch(queue, { batchSize: PGBOSS_BATCH });
      if (batch.length === 0) {
        if (fetched >= jobs) return;
        await new Promise((r) => setTimeout(r, 20)); // the rest is claimed by another loop
        continue;
      }
      fetched += batch.length;
      const res = await boss.complete(queue, batch.map((j) => j.id));
      affected += res.affected ?? 0;
      watch.done(batch.length);
    }
  };
  const timing = startTiming();
  const loops = Array.from({ length: PGBOSS_LOOPS }, () => loop().catch((e) => watch.failed(e)));
  await watch.finished;
  const r = timing.end(watch.count);
  await deadline(Promise.all(loops), STALL_MS, 'the fetch loops did not end');

  const after = await states();
  if ((after.completed ?? 0) !== jobs || affected !== jobs)
    fail(`jobs by state after the run: ${JSON.stringify(after)}; completions that affected a job: ${affected} of ${jobs}`);
  await deadline(boss.stop({ graceful: true, timeout: 10_000 }), 30_000, 'pg-boss did not stop');
  await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  report(r);
}

// ---------------------------------------------------------------------------------------------
// graphile-worker: N no-op jobs added in bulk, then one run() with a no-op task until the jobs
// table is empty.
const GW_CONCURRENCY = 16;
const GW_LOCAL_QUEUE = 100;
const GW_COMPLETE_BATCH_DELAY_MS = 0;

async function runGraphileWorker() {
  const { run, makeWorkerUtils, Logger } = await import('graphile-worker');
  const schema = `peers_graphile_r${round}`;
  await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  const quiet = new Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') console.error(`  graphile-worker ${level}: ${message}`);
  });
  const utils = await makeWorkerUtils({ connectionString: url, schema, logger: quiet });
  try {
    await utils.migrate();
    for (let i = 0; i < jobs; i += INSERT_CHUNK) {
      const n = Math.min(INSERT_CHUNK, jobs - i);
      await utils.addJobs(Array.from({ length: n }, (_, k) => ({ identifier: 'noop', payload: { n: i + k } })));
    }
  } finally {
    await utils.release();
  }
  const countJobs = async () =>
    Number((await sql(`SELECT count(*) AS n FROM ${schema}._private_jobs`)).rows[0].n);
  const queued = await countJobs();
  if (queued !== jobs) fail(`${queued} jobs queued, expected ${jobs}`);
  await checkpoint();
  console.log(
    `  graphile-worker schema ${schema}: ${jobs} jobs queued; run() concurrency ${GW_CONCURRENCY}, ` +
      `localQueue.size ${GW_LOCAL_QUEUE}, completeJobBatchDelay ${GW_COMPLETE_BATCH_DELAY_MS} ms`,
  );

  const watch = progressWatch(jobs, 'graphile-worker job succeeded');
  const events = new EventEmitter();
  events.on('job:success', () => watch.done(1));
  events.on('job:error', ({ error }) => watch.failed(new Error(`a job failed: ${error?.message ?? error}`)));
  const timing = startTiming();
  const runner = await run({
    connectionString: url,
    schema,
    concurrency: GW_CONCURRENCY,
    maxPoolSize: GW_CONCURRENCY, // as its documentation advises: no fewer connections than jobs at once
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quiet,
    events,
    taskList: { noop: async () => {} },
    preset: {
      worker: {
        localQueue: { size: GW_LOCAL_QUEUE },
        completeJobBatchDelay: GW_COMPLETE_BATCH_DELAY_MS,
      },
    },
  });
  let r;
  try {
    await watch.finished;
    // A completion may still be batching: the run ends when the last job's row is gone.
    await pollUntil(async () => (await countJobs()) === 0, 'the jobs table did not empty');
    r = timing.end(watch.count);
  } finally {
    await deadline(runner.stop(), 30_000, 'the graphile-worker runner did not stop');
  }
  await sql(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  report(r);
}

// ---------------------------------------------------------------------------------------------
// ingestd: bench_orchestration, the whole ingest lifecycle of N ingestions. The binary sets up its
// own schema (untimed) and prints "ingest stage:" just before its node starts and "  node: ..."
// after it has finished the N ingestions and stopped; the cluster's CPU is read at those two lines.
const NO_OUTPUT_MS = 120_000; // the binary's stdout and log both silent this long: it is stopped
const RUN_LIMIT_MS = 20 * 60_000; // and whatever it prints, it is stopped after this long

function runIngestd() {
  const binary = process.env.PEERS_BENCH_BINARY;
  if (!binary) fail('PEERS_BENCH_BINARY is not set');
  const logFile = path.join(process.env.PEERS_LOG_DIR || '.', `ingestd-round${round}.log`);
  const logFd = openSync(logFile, 'w');
  const args = ['--ingestions', String(jobs), '--match', 'off', '--replay', 'off',
    ...(process.env.PEERS_BENCH_ARGS || '').split(/\s+/).filter(Boolean)];
  console.log(`  ${binary} ${args.join(' ')}   (its log: ${logFile})`);
  // stdbuf: its summary lines arrive as they are printed, not when the pipe's buffer fills.
  const child = spawn('stdbuf', ['-oL', binary, ...args], {
    env: { ...process.env, INGESTD_TEST_DATABASE_URL: url },
    stdio: ['ignore', 'pipe', logFd],
  });
  closeSync(logFd);
  let timing = null;
  let r = null;
  let nodeLine = null;
  let dbLine = null;
  let clientLine = null;
  const started = Date.now();
  let lastOutput = started;
  let buffered = '';
  let stopping = 0;
  const watchdog = setInterval(() => {
    const silent = Date.now() - lastOutput > NO_OUTPUT_MS;
    const late = Date.now() - started > RUN_LIMIT_MS;
    if (!stopping && (silent || late)) {
      console.error(
        silent
          ? `peers: bench_orchestration printed nothing for ${NO_OUTPUT_MS / 1000} s; stopping it`
          : `peers: bench_orchestration still runs after ${RUN_LIMIT_MS / 60_000} min; stopping it`,
      );
      stopping = Date.now();
      child.kill('SIGTERM');
    } else if (stopping && Date.now() - stopping > 10_000) {
      child.kill('SIGKILL');
    }
  }, 1000);
  // Its stderr (a line per job at the default log level) counts as output too.
  const logWatch = setInterval(() => {
    let size = 0;
    try {
      size = statSync(logFile).size;
    } catch {
      return;
    }
    if (size !== logWatch.size) {
      logWatch.size = size;
      lastOutput = Date.now();
    }
  }, 1000);
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk) => {
    lastOutput = Date.now();
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.startsWith('ingest stage:')) timing = startTiming(child.pid);
      else if (line.startsWith('  node: ')) {
        nodeLine = line;
        const done = Number(line.match(/node: (\d+) completed/)?.[1] ?? 0);
        if (timing) r = timing.end(done);
      } else if (line.startsWith('  node process CPU')) clientLine = line;
      else if (line.startsWith('  database CPU')) dbLine = line;
      if (line.trim()) console.log(`    | ${line}`);
    }
  });
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearInterval(watchdog);
      clearInterval(logWatch);
      if (code !== 0) fail(`bench_orchestration exited with ${code ?? signal}; see ${logFile}`);
      if (!nodeLine || !r) fail(`bench_orchestration printed no "node:" line; see ${logFile}`);
      // "node: 20000 completed, 0 other in 8.69 s = 2302 ingestions/s"
      const m = nodeLine.match(/node: (\d+) completed, (\d+) other.* in ([\d.]+) s = ([\d.]+) ingestions\/s/);
      if (!m) fail(`cannot read "${nodeLine}"`);
      const [completed, other, seconds] = [Number(m[1]), Number(m[2]), Number(m[3])];
      if (completed !== jobs || other !== 0) fail(`${completed} completed and ${other} other of ${jobs}`);
      const ownDb = dbLine?.match(/= (\d+) us per ingestion/)?.[1];
      const client = Number(clientLine?.match(/= (\d+) us per ingestion/)?.[1] ?? NaN);
      // The binary's own timing and CPU of its node; the database CPU is this cluster's alone (the
      // binary's own figure counts every PostgreSQL process of the machine).
      const res = { ...r, seconds, rate: completed / seconds, clientUsPerJob: client };
      report(res, ownDb ? ` (the binary's own machine-wide database figure: ${ownDb} us/ingestion)` : '');
      resolve();
    });
  });
}

const runners = { 'pg-boss': runPgBoss, 'graphile-worker': runGraphileWorker, ingestd: runIngestd };
if (!runners[system]) fail(`unknown system "${system}" (pg-boss, graphile-worker or ingestd)`);
runners[system]().then(
  () => process.exit(0),
  (err) => fail(err?.stack ?? String(err)),
);
