/**
 * `npm run chaos`: breaks things on purpose and counts what survived.
 *
 * Its own local stack (never a reused one: the broker is restarted), the sandbox and several
 * workers (the shipped CLI, one consumer group) in their own processes. Keyed commands are
 * published at a steady rate while, at seeded random moments: the group is scaled from 3 workers
 * to 5, workers are SIGKILLed (each replaced at once), one worker is SIGSTOPped past its session
 * timeout and then SIGCONTed, the broker is restarted, the sandbox answers 503 to everything for
 * a while, the account runs empty (one more worker starts while it is) and is topped up, and the
 * group is scaled down to 2 with SIGTERM. The workers also consume a high-priority topic
 * (PRIORITY_COMMAND_TOPIC, in a group of its own), to which a stream of keyed verification codes is
 * published beside the commands, spread over the same time. Then a fuzz pass of malformed records,
 * then a read of every topic from the beginning and of the sandbox's request log to verify, per
 * priority: every command has exactly one committed result; no command was sent (accepted by the
 * service) more than once; sends of one key reached the service in publish order; and that every
 * fuzz record is a dead letter or a REJECTED result. Exit 1 if a command of either priority is
 * lost, answered twice or sent twice, or a fuzz record is lost.
 *
 *   node bench/chaos.ts [--commands 20000] [--rate 160] [--keys 200] [--priority-commands 2000 (0: no priority topic)]
 *                       [--priority-keys 50] [--kills 5] [--outage-sec 30] [--funds-pause-sec 10] [--accounts 1|2] [--fuzz 1000]
 *                       [--latency-ms 20] [--worker-log-level warn] [--seed N] [--json FILE]
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { quietKnownWarnings } from '../src/cli/warnings.ts';
import { deadLetterFromAvro } from '../src/contracts/dead-letter.ts';
import { resultFromAvro } from '../src/contracts/result-avro.ts';
import type { CommandResult } from '../src/contracts/result.ts';
import { CommandPublisher } from '../src/kafka/command-publisher.ts';
import { backoffDelay } from '../src/retry.ts';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack } from '../tools/stack/index.ts';
import { checkStream, inFlightAt, sendsPerCommand, type StreamCheck } from './lib/chaos-checks.ts';
import type { SendCommand } from '../src/contracts/command.ts';
import { FUZZ_KINDS, fuzzRecord, kindAt, makeCommand, prng, verificationCode, type FuzzKind } from './lib/commands.ts';
import { benchKafka, createTopics, PRODUCED_AT_HEADER } from './lib/kafka.ts';
import { fmt, table } from './lib/markdown.ts';
import { exitWith, REPO_ROOT, sleep } from './lib/proc.ts';
import { RequestLogCollector } from './lib/request-log.ts';
import { readWholeTopic, ResultWatcher, type Arrival } from './lib/results.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { groupAssignment, WorkerPool, type PoolWorker } from './lib/worker-pool.ts';
import { hostileFailures, hostileTable, runHostilePass, type HostileVerdict } from './lib/hostile.ts';
import { workerEnv } from './pipelines/worker.ts';

quietKnownWarnings();

const { values: args } = parseArgs({
  options: {
    commands: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '160' },
    keys: { type: 'string', default: '200' },
    'priority-commands': { type: 'string', default: '2000' },
    'priority-keys': { type: 'string', default: '50' },
    kills: { type: 'string', default: '5' },
    'outage-sec': { type: 'string', default: '30' },
    'funds-pause-sec': { type: 'string', default: '10' },
    accounts: { type: 'string', default: '1' },
    fuzz: { type: 'string', default: '1000' },
    'no-hostile': { type: 'boolean', default: false },
    'latency-ms': { type: 'string', default: '20' },
    'worker-log-level': { type: 'string', default: 'warn' },
    seed: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help === true) {
  console.log(
    'node bench/chaos.ts [--commands 20000] [--rate 160] [--keys 200] [--priority-commands 2000 (0: no priority topic)] [--priority-keys 50] [--kills 5] [--outage-sec 30] [--funds-pause-sec 10] [--fuzz 1000] [--latency-ms 20] [--worker-log-level warn] [--seed N] [--json FILE]',
  );
  process.exit(0);
}
const int = (name: string, raw: string, min = 1): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min} (got ${raw})`);
  return n;
};
const COMMANDS = int('commands', args.commands);
const RATE = int('rate', args.rate);
const KEYS = int('keys', args.keys);
/** Verification codes on the priority topic, spread over the commands' production time; 0: the workers get no priority topic. */
const PRIORITY_COMMANDS = int('priority-commands', args['priority-commands'], 0);
const PRIORITY_KEYS = int('priority-keys', args['priority-keys']);
const KILLS = int('kills', args.kills, 0);
const OUTAGE_SEC = int('outage-sec', args['outage-sec'], 0);
const FUNDS_PAUSE_SEC = int('funds-pause-sec', args['funds-pause-sec'], 0);
const FUZZ = int('fuzz', args.fuzz, 0);
/**
 * 2: a second account (`backup`, another sandbox process) beside `default`. The empty-account and
 * sandbox-outage events hit `default` only: what it proves it did not send goes on to `backup`,
 * and "sent more than once" counts accepted sends over both (docs/accounts.md).
 */
const ACCOUNTS = int('accounts', args.accounts);
if (ACCOUNTS > 2) throw new Error(`--accounts must be 1 or 2 (got ${ACCOUNTS})`);
const LATENCY_MS = int('latency-ms', args['latency-ms'], 0);
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];
/** The workers' LOG_LEVEL: `debug` shows every claim (generation, start, in-doubt marks), for investigating. */
const WORKER_LOG_LEVEL = args['worker-log-level'];
if (!LOG_LEVELS.includes(WORKER_LOG_LEVEL)) throw new Error(`--worker-log-level must be one of ${LOG_LEVELS.join(', ')} (got ${WORKER_LOG_LEVEL})`);
const SEED = args.seed === undefined ? Math.floor(Math.random() * 1_000_000) : int('seed', args.seed);
const PARTITIONS = 12;
/** The worker's minimum: a frozen worker loses its partitions quickly. */
const SESSION_TIMEOUT_MS = 6_000;
/** How long the broker stays dead after its SIGKILL (it then takes seconds more to start: its log recovery). */
const BROKER_KILL_SEC = 15;
/** Twice the session timeout: the group has certainly moved on when the frozen worker wakes. */
const FREEZE_MS = 12_000;
const WORKERS_AT_START = 3;
const WORKERS_SCALED_UP = 5;
const WORKERS_SCALED_DOWN = 2;
/** Probes while the account is empty every ≤ 5 s, so the top-up is noticed quickly. */
const FUNDS_PROBE_MAX_MS = 5_000;
const BALANCE = '1000000000.000000';
const CANARIES = 50;
/** After a failed publish (broker restarting): 0.5–1 s, doubling while it keeps failing, up to 4–8 s. */
const PUBLISH_RETRY = { initialMs: 1_000, maxMs: 8_000, jitter: 0.5 } as const;
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const OUT_DIR = join(REPO_ROOT, 'bench', 'results');
const JSON_FILE = args.json ?? join(OUT_DIR, `chaos-${stamp}.json`);
const LOG_DIR = join(OUT_DIR, `chaos-${stamp}-logs`);

const started = Date.now();
const clock = (at = Date.now()): string => `${((at - started) / 1000).toFixed(1)} s`;
const say = (line: string): void => console.log(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}`);

interface ScheduledEvent {
  readonly atSec: number;
  readonly name: string;
  /** Later events move back by the time this one took (a broker restart pauses production too). */
  readonly blocking?: boolean;
  readonly run: () => Promise<void>;
}

/** A SIGKILL or SIGSTOP, with the victim's partitions just before it (for the in-flight count). */
interface Blow {
  readonly what: 'SIGKILL' | 'SIGSTOP';
  readonly worker: number;
  readonly at: number;
  /** undefined when the group could not be described (e.g. the broker was restarting). */
  readonly partitions: number[] | undefined;
}

function commandIdOf(decoded: unknown): string | undefined {
  if (typeof decoded !== 'object' || decoded === null || !('commandId' in decoded)) return undefined;
  return typeof decoded.commandId === 'string' ? decoded.commandId : undefined;
}

async function main(): Promise<number> {
  mkdirSync(LOG_DIR, { recursive: true });
  const random = prng(SEED);
  // The schedule has its own stream, so it does not depend on how far publishing got.
  const scheduleRandom = prng(SEED + 1);
  say(
    `seed ${SEED}; ${fmt(COMMANDS)} commands on ${KEYS} keys at ${RATE}/s${PRIORITY_COMMANDS > 0 ? ` and ${fmt(PRIORITY_COMMANDS)} verification codes on ${PRIORITY_KEYS} keys on the priority topic beside them` : ''}; workers ${WORKERS_AT_START} → ${WORKERS_SCALED_UP} → ${WORKERS_SCALED_DOWN}, ${KILLS} SIGKILLs, 1 SIGSTOP for ${FREEZE_MS / 1000} s, 1 broker restart, 1 broker SIGKILL for ${BROKER_KILL_SEC} s, sandbox 503 for ${OUTAGE_SEC} s, empty account for ${FUNDS_PAUSE_SEC} s, ${FUZZ} fuzz records; logs in ${LOG_DIR}`,
  );
  say('starting a local Kafka + registry of its own (not reused: the broker gets restarted)…');
  const stack = await startStack({ reuse: false, log: say });
  const restartKafka = stack.restartKafka;
  if (restartKafka === undefined) {
    await stack.stop();
    throw new Error(`chaos needs a local stack it can restart (got mode ${stack.mode}); unset KAFKA_BROKERS/SCHEMA_REGISTRY_URL and SMS_WORKER_STACK=docker`);
  }
  say(`stack (${stack.mode}): ${stack.description}`);
  // The log holds every request of the run (the collector copies it anyway, as it goes).
  const sandbox = await SandboxProcess.start([
    '--log-capacity',
    '200000',
    '--balance',
    BALANCE,
    ...(LATENCY_MS > 0 ? ['--latency-ms', String(LATENCY_MS)] : []),
  ]);
  say(`sandbox at ${sandbox.url} (latency ${LATENCY_MS} ms)`);
  const requestLog = new RequestLogCollector(sandbox);
  requestLog.start();
  const backup =
    ACCOUNTS === 2
      ? await SandboxProcess.start(['--log-capacity', '200000', '--balance', BALANCE, ...(LATENCY_MS > 0 ? ['--latency-ms', String(LATENCY_MS)] : [])])
      : undefined;
  const backupLog = backup === undefined ? undefined : new RequestLogCollector(backup);
  backupLog?.start();
  if (backup !== undefined) say(`backup account's sandbox at ${backup.url}: the empty account and the outage hit default only`);
  const kafka = benchKafka(stack.kafkaBrokers, 'chaos-orchestrator');
  const registry = createRegistry(stack.schemaRegistryUrl);
  const run = randomUUID().slice(0, 6);
  const topics = { commands: `chaos.${run}.commands`, priority: `chaos.${run}.priority`, results: `chaos.${run}.results`, deadLetter: `chaos.${run}.dlq` };
  const group = `chaos-${run}`;
  await createTopics(kafka, [
    { topic: topics.commands, partitions: PARTITIONS },
    ...(PRIORITY_COMMANDS > 0 ? [{ topic: topics.priority, partitions: PARTITIONS }] : []),
    { topic: topics.results, partitions: PARTITIONS },
    { topic: topics.deadLetter, partitions: 1 },
  ]);
  const pool = new WorkerPool({
    env: workerEnv(
      {
        brokers: stack.kafkaBrokers,
        registryUrl: stack.schemaRegistryUrl,
        providerUrl: sandbox.url,
        commands: topics.commands,
        results: topics.results,
        deadLetter: topics.deadLetter,
        group,
      },
      {
        KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
        FUNDS_PROBE_MAX_MS: String(FUNDS_PROBE_MAX_MS),
        LOG_LEVEL: WORKER_LOG_LEVEL,
        ...(PRIORITY_COMMANDS > 0 && { PRIORITY_COMMAND_TOPIC: topics.priority }),
        ...(backup !== undefined && { ACCOUNTS: 'backup', ACCOUNT_BACKUP_BASE_URL: backup.url, ACCOUNT_BACKUP_ACCESS_KEY_ID: 'bench-backup-key' }),
      },
    ),
    logDir: LOG_DIR,
    clientPrefix: group,
    say,
  });
  const watcher = new ResultWatcher(kafka, topics.results);
  const dlqWatcher = new ResultWatcher(kafka, topics.deadLetter);
  const publisher = new CommandPublisher(kafka, registry, topics.commands);
  const priorityPublisher = new CommandPublisher(kafka, registry, topics.priority);
  const timeline: string[] = [];
  const note = (line: string): void => {
    timeline.push(`${clock()}: ${line}`);
    say(line);
  };
  const blows: Blow[] = [];
  const partitionsOf = async (worker: PoolWorker): Promise<number[] | undefined> => {
    try {
      return (await groupAssignment(kafka, group, topics.commands)).get(worker.clientId) ?? [];
    } catch {
      return undefined;
    }
  };
  const pickRunning = (): PoolWorker | undefined => {
    const candidates = pool.running();
    return candidates[Math.floor(scheduleRandom() * candidates.length)];
  };
  const background: Promise<void>[] = [];
  try {
    await Promise.all([watcher.start(), dlqWatcher.start(), publisher.connect(), ...(PRIORITY_COMMANDS > 0 ? [priorityPublisher.connect()] : [])]);
    for (let i = 0; i < WORKERS_AT_START; i += 1) pool.start('initial group');

    // Publishing at a steady rate, paused while the broker restarts.
    let paused = false;
    /** The broker SIGKILL: when it was killed, and when it answered again. */
    let brokerKill: { readonly killedAt: number; readonly backAt: number } | undefined;
    const productionSec = COMMANDS / RATE;
    /** `count` commands `<idPrefix>-<n>` on `keys` keys `<keyPrefix>-<k>`, `rate` a second in ticks of 250 ms; a failed batch is retried. */
    const publishStream = (s: {
      readonly publisher: CommandPublisher;
      readonly topic: string;
      readonly count: number;
      readonly rate: number;
      readonly idPrefix: string;
      readonly keyPrefix: string;
      readonly keys: number;
      readonly random: () => number;
      readonly make: (commandId: string, random: () => number) => SendCommand;
    }): { published: number; errors: number; readonly ids: string[]; done: Promise<void> } => {
      const stream = { published: 0, errors: 0, ids: [] as string[], done: Promise.resolve() };
      let failuresInARow = 0;
      stream.done = (async () => {
        const tickMs = 250;
        const perTick = Math.max(1, Math.round((s.rate * tickMs) / 1000));
        const t0 = Date.now();
        let tick = 0;
        while (stream.published < s.count) {
          tick += 1;
          const due = t0 + tick * tickMs;
          if (due > Date.now()) await sleep(due - Date.now());
          if (paused) continue;
          const batch = [];
          for (let i = 0; i < perTick && stream.published + i < s.count; i += 1) {
            const commandId = `${s.idPrefix}-${stream.published + i}`;
            const key = `${s.keyPrefix}-${Math.floor(s.random() * s.keys)}`;
            batch.push({
              key,
              commandId,
              value: await s.publisher.encode(s.make(commandId, s.random)),
              headers: { [PRODUCED_AT_HEADER]: String(Date.now()) },
            });
          }
          try {
            await s.publisher.publishRaw(batch.map(({ key, value, headers }) => ({ key, value, headers })));
            for (const r of batch) stream.ids.push(r.commandId);
            stream.published += batch.length;
            failuresInARow = 0;
          } catch (error) {
            // Retried with the next tick; a batch that did land before the error may then exist twice.
            stream.errors += 1;
            failuresInARow += 1;
            say(`publish to ${s.topic} failed (will retry): ${error instanceof Error ? error.message : String(error)}`);
            await sleep(backoffDelay(failuresInARow, PUBLISH_RETRY));
          }
        }
      })();
      return stream;
    };
    const normal = publishStream({
      publisher,
      topic: topics.commands,
      count: COMMANDS,
      rate: RATE,
      idPrefix: `c-${run}`,
      keyPrefix: `k-${run}`,
      keys: KEYS,
      random,
      make: (commandId, r) => makeCommand(commandId, kindAt(r), r),
    });
    // Codes over the same time as the commands, from a random stream of their own (the commands' stays as without them).
    const high =
      PRIORITY_COMMANDS > 0
        ? publishStream({
            publisher: priorityPublisher,
            topic: topics.priority,
            count: PRIORITY_COMMANDS,
            rate: PRIORITY_COMMANDS / productionSec,
            idPrefix: `h-${run}`,
            keyPrefix: `hk-${run}`,
            keys: PRIORITY_KEYS,
            random: prng(SEED + 2),
            make: (commandId, r) => verificationCode(commandId, r).command,
          })
        : undefined;

    // Fault schedule (seconds after the start of production), drawn from the seed.
    const within = (from: number, to: number): number => from + scheduleRandom() * (to - from);
    const span = productionSec;
    const events: ScheduledEvent[] = [];
    events.push({
      atSec: within(0.06 * span, 0.1 * span),
      name: `scale up to ${WORKERS_SCALED_UP}`,
      run: async () => {
        note(`scaling up: ${pool.live().length} → ${WORKERS_SCALED_UP} workers`);
        while (pool.live().length < WORKERS_SCALED_UP) pool.start('scale-up');
      },
    });
    const killWindows = Array.from(
      { length: KILLS },
      (_, i) => [0.12 + (0.83 * i) / Math.max(1, KILLS), 0.12 + (0.83 * (i + 1)) / Math.max(1, KILLS) - 0.04] as const,
    );
    killWindows.forEach(([a, b], i) =>
      events.push({
        atSec: within(a * span, b * span),
        name: `SIGKILL #${i + 1}`,
        run: async () => {
          const victim = pickRunning();
          if (victim === undefined) {
            note(`SIGKILL #${i + 1}: no running worker to kill`);
            return;
          }
          const partitions = await partitionsOf(victim);
          const at = Date.now();
          await pool.kill(victim);
          blows.push({ what: 'SIGKILL', worker: victim.n, at, partitions });
          note(`SIGKILL #${i + 1}: worker #${victim.n} (partitions ${partitions?.join(',') ?? '?'}; results so far ${fmt(watcher.distinct)})`);
          pool.start(`replacement for #${victim.n}`);
        },
      }),
    );
    events.push({
      atSec: within(0.2 * span, 0.26 * span),
      name: `SIGSTOP for ${FREEZE_MS / 1000} s`,
      run: async () => {
        const victim = pickRunning();
        if (victim === undefined) return;
        const partitions = await partitionsOf(victim);
        const at = Date.now();
        blows.push({ what: 'SIGSTOP', worker: victim.n, at, partitions });
        note(
          `SIGSTOP worker #${victim.n} for ${FREEZE_MS / 1000} s (session timeout ${SESSION_TIMEOUT_MS / 1000} s; partitions ${partitions?.join(',') ?? '?'})`,
        );
        background.push(pool.freeze(victim, FREEZE_MS).then(() => note(`SIGCONT worker #${victim.n}`)));
      },
    });
    events.push({
      atSec: within(0.3 * span, 0.38 * span),
      name: 'broker restart',
      blocking: true,
      run: async () => {
        note('restarting the Kafka broker (SIGTERM, same ports and data)…');
        paused = true;
        const t = Date.now();
        try {
          await restartKafka();
        } finally {
          paused = false;
        }
        note(`broker back after ${fmt((Date.now() - t) / 1000, 1)} s`);
      },
    });
    events.push({
      atSec: within(0.6 * span, 0.68 * span),
      name: `broker SIGKILL for ${BROKER_KILL_SEC} s`,
      blocking: true,
      run: async () => {
        note(`killing the Kafka broker (SIGKILL: a node lost), starting it again after ${BROKER_KILL_SEC} s on the same ports and data…`);
        paused = true;
        const t = Date.now();
        try {
          await restartKafka({ kill: true, downMs: BROKER_KILL_SEC * 1000 });
        } finally {
          paused = false;
        }
        brokerKill = { killedAt: t, backAt: Date.now() };
        note(`broker back after ${fmt((Date.now() - t) / 1000, 1)} s (answering again ${fmt((Date.now() - t) / 1000 - BROKER_KILL_SEC, 1)} s after its start)`);
      },
    });
    if (OUTAGE_SEC > 0) {
      events.push({
        atSec: within(0.44 * span, 0.5 * span),
        name: `sandbox down for ${OUTAGE_SEC} s`,
        run: async () => {
          await sandbox.faults({ down: true });
          note(`sandbox down: 503 to every request for ${OUTAGE_SEC} s`);
          background.push(
            sleep(OUTAGE_SEC * 1000).then(async () => {
              await sandbox.faults({ down: false });
              note('sandbox up again');
            }),
          );
        },
      });
    }
    if (FUNDS_PAUSE_SEC > 0) {
      events.push({
        atSec: within(0.76 * span, 0.8 * span),
        name: `empty account for ${FUNDS_PAUSE_SEC} s`,
        run: async () => {
          await sandbox.setBalance('0');
          note(`account empty (balance 0: every send answered 105400 InsufficientFunds) for ${FUNDS_PAUSE_SEC} s`);
          background.push(
            (async () => {
              await sleep(Math.min(3_000, (FUNDS_PAUSE_SEC * 1000) / 2));
              const extra = pool.start('started while the account is empty');
              note(`worker #${extra.n} started while the account is empty`);
              await sleep(FUNDS_PAUSE_SEC * 1000 - Math.min(3_000, (FUNDS_PAUSE_SEC * 1000) / 2));
              await sandbox.setBalance(BALANCE);
              note(`account topped up to ${BALANCE}`);
            })(),
          );
        },
      });
    }
    events.push({
      atSec: within(0.86 * span, 0.9 * span),
      name: `scale down to ${WORKERS_SCALED_DOWN}`,
      run: async () => {
        note(`scaling down: ${pool.live().length} → ${WORKERS_SCALED_DOWN} workers (SIGTERM, one at a time)`);
        background.push(
          (async () => {
            for (;;) {
              const live = pool.live();
              if (live.length <= WORKERS_SCALED_DOWN) break;
              const victim = pool.running()[0] ?? live[0];
              if (victim === undefined) break;
              const t = Date.now();
              const exit = await pool.terminate(victim);
              note(
                `worker #${victim.n} stopped with SIGTERM after ${fmt((Date.now() - t) / 1000, 1)} s: exit ${exit.code ?? '?'}${exit.signal === null ? '' : ` (signal ${exit.signal})`}`,
              );
            }
          })(),
        );
      },
    });
    events.sort((a, b) => a.atSec - b.atSec);
    say(
      `schedule: ${events.map((e) => `${e.name} @${e.atSec.toFixed(1)} s`).join(', ')} after the start of production (≈ ${fmt(productionSec)} s long); later events move back by the broker's restart time`,
    );
    const productionStart = Date.now();
    let shiftMs = 0;
    for (const event of events) {
      const due = productionStart + event.atSec * 1000 + shiftMs;
      if (due > Date.now()) await sleep(due - Date.now());
      const began = Date.now();
      await event.run();
      if (event.blocking === true) shiftMs += Date.now() - began;
    }
    await Promise.all(background);
    await Promise.all([normal.done, high?.done]);
    note(
      `all ${fmt(normal.published)} commands${high === undefined ? '' : ` and ${fmt(high.published)} codes`} published (${normal.errors + (high?.errors ?? 0)} publish errors retried); ${pool.live().length} workers live`,
    );

    // Wait until every command has a result.
    const want = new Set([...normal.ids, ...(high?.ids ?? [])]);
    const have = (): number => {
      let n = 0;
      for (const id of want) if (watcher.perKey.has(id)) n += 1;
      return n;
    };
    let lastLog = Date.now();
    const complete = await watcher.waitUntil(
      () => have() >= want.size,
      600_000,
      () => {
        if (Date.now() - lastLog > 10_000) {
          lastLog = Date.now();
          say(`waiting for results: ${fmt(have())}/${fmt(want.size)}`);
        }
      },
    );
    note(
      complete
        ? `every command has a result (live reader)`
        : `deadline passed with ${fmt(have())}/${fmt(want.size)} results (live reader); verifying from the topic`,
    );

    // Fuzz pass: malformed records, then canaries that must still get results.
    const fuzzKeys = new Map<string, FuzzKind>();
    const workersBeforeFuzz = pool.workers.length;
    const exitsBeforeFuzz = pool.unplannedExits.length;
    if (FUZZ > 0) {
      const records = [];
      for (let i = 0; i < FUZZ; i += 1) {
        const kind = FUZZ_KINDS[i % FUZZ_KINDS.length] as FuzzKind;
        const key = `fuzz-${run}-${kind}-${i}`;
        fuzzKeys.set(key, kind);
        records.push({ key, value: await fuzzRecord(kind, key, random, (value) => registry.encode(publisher.schemaId, value)) });
      }
      for (let i = 0; i < records.length; i += 100) await publisher.publishRaw(records.slice(i, i + 100));
      const canaries = Array.from({ length: CANARIES }, (_, i) => ({ command: makeCommand(`canary-${run}-${i}`, 'text-single', random) }));
      await publisher.publish(canaries);
      note(`fuzz: published ${FUZZ} malformed records (${FUZZ_KINDS.join(', ')}) and ${CANARIES} canary commands`);
      const fuzzDone = (): boolean => {
        let handled = 0;
        for (const key of fuzzKeys.keys()) if (watcher.perKey.has(key) || dlqWatcher.perKey.has(key)) handled += 1;
        return handled >= fuzzKeys.size && canaries.every((c) => watcher.perKey.has(c.command.commandId));
      };
      const fuzzComplete = await watcher.waitUntil(fuzzDone, 180_000);
      note(fuzzComplete ? 'fuzz: every malformed record handled and every canary answered (live readers)' : 'fuzz: deadline passed; verifying from the topics');
    }

    // Hostile inputs (bench/lib/hostile.ts): one kind at a time on one partition, each followed by
    // a canary, with the workers still running.
    let hostile: HostileVerdict[] = [];
    if (!args['no-hostile']) {
      note('hostile pass: oversized and hostile commands, hostile answers from the service');
      hostile = await runHostilePass({
        kafka,
        registry,
        commandTopic: topics.commands,
        resultTopic: topics.results,
        deadLetterTopic: topics.deadLetter,
        sandboxUrl: sandbox.url,
        workerPids: () => pool.running().flatMap((w) => (w.child.pid === undefined ? [] : [w.child.pid])),
        runId: run,
        log: note,
      });
    }

    const stops = await pool.stopAll();
    note(
      `stopped the last workers with SIGTERM: ${stops.map((s) => `#${s.n} exit ${s.code ?? '?'}${s.signal === null ? '' : ` (signal ${s.signal})`}`).join(', ')}`,
    );
    await Promise.all([watcher.stop(), dlqWatcher.stop()]);
    await publisher.disconnect();
    if (PRIORITY_COMMANDS > 0) await priorityPublisher.disconnect();
    await requestLog.stop();
    await backupLog?.stop();

    // Verification from the topics themselves, read from the beginning by fresh consumers.
    say('reading the command, result and dead-letter topics from the beginning…');
    const [commandRecords, priorityRecords, resultRecords, deadRecords] = await Promise.all([
      readWholeTopic(kafka, topics.commands),
      PRIORITY_COMMANDS > 0 ? readWholeTopic(kafka, topics.priority) : [],
      readWholeTopic(kafka, topics.results),
      readWholeTopic(kafka, topics.deadLetter),
    ]);
    /** Partition of each command of either stream (in its own topic). */
    const partitionOf = new Map<string, number>();
    /** A stream's commands in its topic (keys `<keyPrefix>-…`, ids `<idPrefix>-…`): records per id, and per key the ids in the order of their first record (publish order). */
    const streamIn = async (
      records: readonly Arrival[],
      keyPrefix: string,
      idPrefix: string,
    ): Promise<{ recordsPerCommand: Map<string, number>; orderByKey: Map<string, string[]> }> => {
      const recordsPerCommand = new Map<string, number>();
      const publishOrder = new Map<string, { id: string; offset: bigint }[]>();
      for (const r of records) {
        if (r.value === null || !r.key.startsWith(`${keyPrefix}-`)) continue;
        let id: string | undefined;
        try {
          id = commandIdOf(await registry.decode(r.value));
        } catch {
          id = undefined;
        }
        if (id === undefined || !id.startsWith(`${idPrefix}-`)) continue;
        const seen = recordsPerCommand.get(id) ?? 0;
        recordsPerCommand.set(id, seen + 1);
        if (seen > 0) continue;
        partitionOf.set(id, r.partition);
        publishOrder.set(r.key, [...(publishOrder.get(r.key) ?? []), { id, offset: BigInt(r.offset) }]);
      }
      const orderByKey = new Map<string, string[]>();
      for (const [key, list] of publishOrder)
        orderByKey.set(
          key,
          list.sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0)).map((e) => e.id),
        );
      return { recordsPerCommand, orderByKey };
    };
    const normalIn = await streamIn(commandRecords, `k-${run}`, `c-${run}`);
    const highIn = await streamIn(priorityRecords, `hk-${run}`, `h-${run}`);
    const results = new Map<string, CommandResult[]>();
    let undecodableResults = 0;
    for (const r of resultRecords) {
      if (r.value === null) continue;
      try {
        const result = resultFromAvro(await registry.decode(r.value));
        const list = results.get(result.commandId) ?? [];
        list.push(result);
        results.set(result.commandId, list);
      } catch {
        undecodableResults += 1;
      }
    }
    const deadByKey = new Map<string, string[]>();
    for (const r of deadRecords) {
      if (r.value === null) continue;
      const letter = deadLetterFromAvro(await registry.decode(r.value));
      const key = letter.key?.toString('utf8') ?? '(null)';
      deadByKey.set(key, [...(deadByKey.get(key) ?? []), letter.error.code]);
    }

    /** The normal stream's commands (the SIGKILL table looks at these: its partitions are the normal group's). */
    const commandIds = [...normalIn.recordsPerCommand.keys()];
    const outcomeOf = (r: CommandResult): string => `${r.outcome}${r.error === null ? '' : ` ${r.error.code}`}`;
    const outcomesOf = (ids: Iterable<string>): Map<string, number> => {
      const outcomes = new Map<string, number>();
      for (const id of ids) for (const r of results.get(id) ?? []) outcomes.set(outcomeOf(r), (outcomes.get(outcomeOf(r)) ?? 0) + 1);
      return outcomes;
    };

    // The sandbox's view: requests and accepted (charged) sends per command id.
    const requests = backupLog === undefined ? requestLog.all() : mergedLogs(requestLog.all(), backupLog.all());
    // Every correlation id counts for "sent more than once" (the canaries too); order and in-flight look at the run's commands.
    const sends = sendsPerCommand(requests);
    const sentTwice = [...sends.entries()].filter(([, s]) => s.accepted > 1);
    const extraSends = sentTwice.reduce((n, [, s]) => n + s.accepted - 1, 0);
    const requestedTwice = [...sends.values()].filter((s) => s.requests > 1).length;
    const sandboxStats = await sandbox.stats();
    // Cross-check with the sandbox's own counters (independent of our copy of its log).
    const sandboxTwice = backup === undefined ? Object.keys(await sandbox.correlations(2)).length : await acceptedTwiceOverBoth(sandbox, backup);
    /** The verdict per priority: the normal topic's commands, and the priority topic's codes (when it had any). */
    const streams: {
      readonly priority: 'normal' | 'high';
      readonly what: string;
      readonly expected: number;
      readonly check: StreamCheck;
      readonly ids: readonly string[];
    }[] = [
      { priority: 'normal' as const, what: `COMMAND_TOPIC, ${fmt(COMMANDS)} commands`, expected: COMMANDS, in: normalIn },
      ...(PRIORITY_COMMANDS > 0
        ? [{ priority: 'high' as const, what: `PRIORITY_COMMAND_TOPIC, ${fmt(PRIORITY_COMMANDS)} codes`, expected: PRIORITY_COMMANDS, in: highIn }]
        : []),
    ].map((s) => ({
      priority: s.priority,
      what: s.what,
      expected: s.expected,
      ids: [...s.in.recordsPerCommand.keys()],
      check: checkStream({ expected: s.expected, recordsPerCommand: s.in.recordsPerCommand, results, sends, orderByKey: s.in.orderByKey }),
    }));
    const normalCheck = streams[0]?.check;
    if (normalCheck === undefined) throw new Error('no normal stream');
    /** Sent more than once among the streams' commands; the rest of `sentTwice` are canaries and hostile-pass commands. */
    const streamsSentTwice = streams.reduce((n, st) => n + st.check.sentTwice.length, 0);

    // Sends in flight at each SIGKILL / SIGSTOP.
    const firstVisible = new Map<string, number>();
    for (const a of watcher.arrivals) if (!firstVisible.has(a.key)) firstVisible.set(a.key, a.visibleAt);
    // UNKNOWN results a new owner reported for an earlier owner's mark (in doubt: no attempt of its
    // own), each charged to the first signal at or after its mark that hit a worker holding its
    // partition: what that signal left UNKNOWN, to compare with the sends in flight at it.
    const inDoubtByBlow = new Map<number, number>();
    // Of those, the ones never sent: no request of theirs reached the service (marked, never called).
    const neverSentByBlow = new Map<number, number>();
    for (const id of commandIds)
      for (const r of results.get(id) ?? []) {
        const markedAt = r.attemptedAt;
        if (r.outcome !== 'UNKNOWN' || r.attempts !== 0 || typeof markedAt !== 'number') continue;
        const partition = partitionOf.get(id) ?? -1;
        const i = blows.findIndex((b) => b.at >= markedAt && (b.partitions?.includes(partition) ?? false));
        if (i < 0) continue;
        inDoubtByBlow.set(i, (inDoubtByBlow.get(i) ?? 0) + 1);
        if (sends.get(id) === undefined) neverSentByBlow.set(i, (neverSentByBlow.get(i) ?? 0) + 1);
      }
    const ratio = (n: number, of: number | undefined): string => (of === undefined || of === 0 ? '–' : `${(n / of).toFixed(2)}×`);
    // FAILED 105400: the account's refusal never fails a command (the empty-account window holds them).
    const failedForFunds = commandIds.filter((id) => (results.get(id) ?? []).some((r) => r.outcome === 'FAILED' && r.error?.code === '105400'));
    const blowRows = blows.map((b, i) => {
      const inVictim = b.partitions === undefined ? undefined : commandIds.filter((id) => b.partitions?.includes(partitionOf.get(id) ?? -1));
      const flying = inVictim === undefined ? undefined : inFlightAt(b.at, inVictim, sends, firstVisible);
      const flyingAll = inFlightAt(b.at, commandIds, sends, firstVisible);
      const fates = new Map<string, number>();
      for (const id of flying ?? []) for (const r of results.get(id) ?? []) fates.set(outcomeOf(r), (fates.get(outcomeOf(r)) ?? 0) + 1);
      const twiceAmong = (flying ?? []).filter((id) => (sends.get(id)?.accepted ?? 0) > 1).length;
      return {
        row: [
          `${b.what} ${b.what === 'SIGKILL' ? `#${blows.slice(0, i + 1).filter((x) => x.what === 'SIGKILL').length}` : ''}`.trim(),
          clock(b.at),
          `#${b.worker}`,
          b.partitions === undefined ? '?' : b.partitions.join(','),
          flying === undefined ? '?' : fmt(flying.length),
          [...fates.entries()].map(([k, n]) => `${k} ${n}`).join(', ') || '–',
          fmt(twiceAmong),
          fmt(flyingAll.length),
          fmt(inDoubtByBlow.get(i) ?? 0),
          ratio(inDoubtByBlow.get(i) ?? 0, flying?.length),
          fmt(neverSentByBlow.get(i) ?? 0),
          ratio(neverSentByBlow.get(i) ?? 0, flying?.length),
        ],
        json: {
          ...b,
          atSec: (b.at - started) / 1000,
          inFlight: flying?.length ?? null,
          inFlightAllPartitions: flyingAll.length,
          fates: Object.fromEntries(fates),
          sentTwiceAmongThem: twiceAmong,
          unknownChargedToIt: inDoubtByBlow.get(i) ?? 0,
          neverSentUnknownChargedToIt: neverSentByBlow.get(i) ?? 0,
        },
      };
    });

    const fuzzRows: string[][] = [];
    let fuzzLost = 0;
    let fuzzTwice = 0;
    for (const kind of FUZZ_KINDS) {
      const keys = [...fuzzKeys.entries()].filter(([, k]) => k === kind).map(([key]) => key);
      let dead = 0;
      let rejected = 0;
      let other = 0;
      let lost = 0;
      let twice = 0;
      const codes = new Map<string, number>();
      for (const key of keys) {
        const letters = deadByKey.get(key) ?? [];
        const rs = results.get(key) ?? [];
        dead += letters.length;
        for (const code of letters) codes.set(code, (codes.get(code) ?? 0) + 1);
        rejected += rs.filter((r) => r.outcome === 'REJECTED').length;
        other += rs.filter((r) => r.outcome !== 'REJECTED').length;
        if (letters.length + rs.length === 0) lost += 1;
        if (letters.length + rs.length > 1) twice += 1;
      }
      fuzzLost += lost;
      fuzzTwice += twice;
      fuzzRows.push([
        kind,
        fmt(keys.length),
        fmt(dead),
        fmt(rejected),
        fmt(other),
        fmt(lost),
        fmt(twice),
        [...codes.entries()].map(([c, n]) => `${c} ${n}`).join(', '),
      ]);
    }
    const canaryIds = Array.from({ length: FUZZ > 0 ? CANARIES : 0 }, (_, i) => `canary-${run}-${i}`);
    const canariesAnswered = canaryIds.filter((id) => (results.get(id)?.length ?? 0) === 1).length;
    const crashesDuringFuzz = pool.unplannedExits.length - exitsBeforeFuzz;
    const kills = blows.filter((b) => b.what === 'SIGKILL').length;
    const afterKill = brokerKill === undefined ? [] : requests.filter((r) => r.receivedAt >= (brokerKill?.backAt ?? 0)).map((r) => r.receivedAt);
    const firstSendAfterKill = brokerKill === undefined || afterKill.length === 0 ? undefined : Math.min(...afterKill) - brokerKill.backAt;

    const failures: string[] = [];
    for (const st of streams) failures.push(...st.check.failures.map((f) => `${st.priority} priority: ${f}`));
    if (backup !== undefined) {
      // With two accounts: which account ended each result, and why commands left default.
      const byAccount = new Map<string, number>();
      const reasons = new Map<string, number>();
      for (const list of results.values()) {
        for (const r of list) {
          byAccount.set(r.account ?? '(none)', (byAccount.get(r.account ?? '(none)') ?? 0) + 1);
          for (const f of r.failovers ?? []) reasons.set(`${f.account} ${f.reason}`, (reasons.get(`${f.account} ${f.reason}`) ?? 0) + 1);
        }
      }
      say(
        `results by account: ${[...byAccount].map(([a, n]) => `${a} ${fmt(n)}`).join(', ')}; failovers: ${[...reasons].map(([r, n]) => `${r} ${fmt(n)}`).join(', ') || 'none'}`,
      );
      if (FUNDS_PAUSE_SEC > 0 && (byAccount.get('backup') ?? 0) === 0) failures.push('two accounts and default emptied, but no result came through backup');
    }
    // Any other id the service accepted twice (canaries, the hostile pass's commands), or the sandbox's own count saying more.
    if (sentTwice.length > streamsSentTwice || sandboxTwice > streamsSentTwice)
      failures.push(`${Math.max(sentTwice.length, sandboxTwice)} correlation ids sent more than once in all (the sandbox's own count ${sandboxTwice})`);
    if (failedForFunds.length > 0) failures.push(`${failedForFunds.length} commands FAILED 105400 while the account was empty`);
    if (fuzzLost > 0) failures.push(`${fuzzLost} fuzz records lost`);
    failures.push(...hostileFailures(hostile));
    if (fuzzTwice > 0) failures.push(`${fuzzTwice} fuzz records handled twice`);
    if (canariesAnswered < canaryIds.length) failures.push(`${canaryIds.length - canariesAnswered} canaries unanswered after the fuzz pass`);
    const passFail = (ok: boolean): string => (ok ? 'PASS' : '**FAIL**');

    const lines: string[] = [];
    lines.push('');
    lines.push('## Chaos run: verification');
    lines.push('');
    lines.push(
      `Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${fmt(totalmem() / 1024 ** 3)} GiB, Node ${process.version}; load average at the end ${loadavg()
        .map((l) => l.toFixed(2))
        .join(
          ' ',
        )}. Seed ${SEED}. Wall time ${fmt((Date.now() - started) / 1000)} s. ${fmt(COMMANDS)} commands on ${KEYS} keys at ${RATE}/s${PRIORITY_COMMANDS > 0 ? ` and ${fmt(PRIORITY_COMMANDS)} verification codes on ${PRIORITY_KEYS} keys of the priority topic (PRIORITY_COMMAND_TOPIC, its own group) beside them` : ''}, ${PARTITIONS} partitions a topic, session timeout ${SESSION_TIMEOUT_MS / 1000} s, sandbox latency ${LATENCY_MS} ms.`,
    );
    lines.push('');
    lines.push('Timeline:');
    for (const t of timeline) lines.push(`- ${t}`);
    lines.push('');
    // Per priority: a column each, the expected value, and each one's verdict (normal / high).
    const perStream = (
      check: string,
      value: (c: StreamCheck, expected: number) => string,
      expected: string,
      ok?: (c: StreamCheck, expected: number) => boolean,
    ): string[] => [
      check,
      ...streams.map((st) => value(st.check, st.expected)),
      expected,
      ok === undefined ? '' : streams.map((st) => passFail(ok(st.check, st.expected))).join(' / '),
    ];
    lines.push(
      table(
        ['check', ...streams.map((st) => `${st.priority} (${st.what})`), 'expected', 'verdict'],
        [
          perStream(
            'commands in (distinct ids in the topic)',
            (c) => fmt(c.commandsIn),
            'all published',
            (c, n) => c.commandsIn >= n,
          ),
          perStream('command records (a publish retried after an error may repeat one)', (c) => fmt(c.records), 'as many'),
          perStream('results out (committed, for those commands)', (c) => fmt(c.resultsOut), 'one each'),
          perStream(
            '**lost: commands without a result**',
            (c) => `**${fmt(c.missing.length)}**`,
            '0',
            (c) => c.missing.length === 0,
          ),
          perStream(
            '**duplicate results: commands with more than one committed result**',
            (c) => `**${fmt(c.duplicated.length)}**`,
            '0',
            (c) => c.duplicated.length === 0,
          ),
          perStream(
            '**sent more than once: commands the sandbox accepted (charged) more than once**',
            (c) => `**${fmt(c.sentTwice.length)}**`,
            '0',
            (c) => c.sentTwice.length === 0,
          ),
          perStream('`UNKNOWN` results (the service may have sent; not sent again)', (c) => fmt(c.unknownResults), '—'),
          perStream(
            'per-key order violations (adjacent pairs of sent commands / keys)',
            (c) => `${fmt(c.order.violations)} (${fmt(c.order.pairs)} / ${fmt(c.order.keys)})`,
            '0',
            (c) => c.order.violations === 0,
          ),
        ],
        ['l', ...streams.map(() => 'r' as const), 'l', 'l'],
      ),
    );
    lines.push('');
    lines.push(
      table(
        ['check (the whole run)', 'count', 'expected', 'verdict'],
        [
          [
            '**sent more than once: any correlation id (canaries and the hostile pass included) the sandbox accepted more than once**',
            `**${fmt(sentTwice.length)}**`,
            '0',
            passFail(sentTwice.length === 0 && sandboxTwice === 0),
          ],
          ["… extra sends in total / the sandbox's own count of such ids", `${fmt(extraSends)} / ${fmt(sandboxTwice)}`, '0 / 0', ''],
          ['commands with more than one request (503s, 105400s and retries before a send included)', fmt(requestedTwice), 'any', ''],
          [
            'commands FAILED 105400 (the empty account holds its commands: a refusal of the account never fails one)',
            fmt(failedForFunds.length),
            '0',
            passFail(failedForFunds.length === 0),
          ],
          [
            'first request at the service after the broker SIGKILL, counted from the broker answering again (the members keep their ids: no session to wait out)',
            firstSendAfterKill === undefined ? '–' : `${fmt(firstSendAfterKill / 1000, 1)} s`,
            '≤ 5 s',
            '',
          ],
          ['worker processes started / SIGKILLs', `${pool.workers.length} / ${kills}`, '', ''],
          ['worker exits we did not cause', fmt(pool.unplannedExits.length), '0', ''],
          ['result records that do not decode', fmt(undecodableResults), '0', ''],
          ['sandbox requests the run could not copy from its log', fmt(requestLog.abandonedGaps), '0', ''],
          ['live result reader restarts (kafkajs gave up, e.g. during the broker restart)', fmt(watcher.restarts + dlqWatcher.restarts), 'any', ''],
        ],
        ['l', 'r', 'l', 'l'],
      ),
    );
    lines.push('');
    lines.push(
      "**Sends in flight** at a SIGKILL or SIGSTOP: commands of the partitions the victim held (the group coordinator's assignment, read just before the signal) whose first request had reached the sandbox at or before the signal and whose result our live `read_committed` reader had not yet seen then. It over-counts rather than under-counts: the reader lags a commit (by ≈ 0.1 s, more on a loaded machine), and the coordinator's assignment can lag a rebalance, so some of these were answered by the victim just before the signal or belonged to another worker already (the `SENT` among their results). The rest are what a new owner must report `UNKNOWN` instead of sending again. **UNKNOWN it left**: the `UNKNOWN` results a new owner reported for a mark (no attempt of its own), each charged to the first signal at or after the mark that hit a worker holding its partition; the target is at most 1.2× the sends in flight. **Never sent**: those of them of which no request reached the service (none in its log): commands marked and not yet called when the signal came (a command whose calls the service answered 503 or 105400 was called: its call under way at the signal may have been accepted); the target is at most 0.25× the sends in flight (the marks ahead of the slots are paced to what the slots need). These look at the normal topic's commands only (the victim's partitions are those of the normal group).",
    );
    lines.push('');
    lines.push(
      table(
        [
          'signal',
          'at',
          'worker',
          'its partitions',
          'sends in flight',
          'their results',
          'of them sent twice',
          'in flight, all workers',
          'UNKNOWN it left',
          'UNKNOWN ÷ in flight',
          'of them never sent',
          'never sent ÷ in flight',
        ],
        blowRows.map((b) => b.row),
        ['l', 'r', 'l', 'l', 'r', 'l', 'r', 'r', 'r', 'r', 'r', 'r'],
      ),
    );
    lines.push('');
    for (const st of streams)
      lines.push(
        `Outcomes of the ${st.priority} priority's results: ${[...outcomesOf(st.ids).entries()]
          .sort((a, b) => b[1] - a[1])
          .map(([k, n]) => `${k}: ${fmt(n)}`)
          .join(' · ')}`,
      );
    lines.push(
      `Sandbox: ${fmt(sandboxStats.requests)} requests, by HTTP status ${JSON.stringify(sandboxStats.byHttpStatus)}, by answer code ${JSON.stringify(sandboxStats.byAnswerCode)}, accepted sends ${fmt(sandboxStats.acceptedSends)}, duplicate sends ${fmt(sandboxStats.duplicateSends)} over ${fmt(sandboxStats.duplicateCorrelationIds)} ids.`,
    );
    if (sentTwice.length > 0)
      lines.push(
        `Sent more than once (first 10): ${sentTwice
          .slice(0, 10)
          .map(
            ([id, s]) =>
              `${id} ×${s.accepted} (partition ${partitionOf.get(id) ?? '?'}, first request at ${clock(s.firstAt)}, result ${(results.get(id) ?? []).map(outcomeOf).join('/') || 'none'})`,
          )
          .join(', ')}`,
      );
    for (const { priority, check } of streams) {
      const { order, missing, duplicated } = check;
      if (order.examples.length > 0)
        lines.push(
          `Order violations, ${priority} priority (first ${order.examples.length}): ${order.violating.map((v, i) => `${order.examples[i] ?? ''} (partition ${partitionOf.get(v.later) ?? '?'})`).join('; ')}`,
        );
      if (missing.length > 0) lines.push(`Without a result, ${priority} priority (first 10): ${missing.slice(0, 10).join(', ')}`);
      if (duplicated.length > 0)
        lines.push(
          `More than one result, ${priority} priority (first 10): ${duplicated
            .slice(0, 10)
            .map((id) => `${id} ×${results.get(id)?.length ?? 0}`)
            .join(', ')}`,
        );
    }
    for (const exit of pool.unplannedExits) lines.push(`Unplanned: ${exit}`);
    if (FUZZ > 0) {
      lines.push('');
      lines.push(
        `Fuzz pass: ${FUZZ} malformed records; the workers ${crashesDuringFuzz === 0 ? 'stayed up' : `exited ${crashesDuringFuzz} time(s)`} (no worker started during it: ${pool.workers.length === workersBeforeFuzz ? 'yes' : 'no'}); canaries answered after it: ${canariesAnswered}/${CANARIES}; records lost ${fuzzLost}, handled twice ${fuzzTwice}: ${passFail(fuzzLost === 0 && fuzzTwice === 0)}.`,
      );
      lines.push('');
      lines.push(
        table(['kind', 'records', 'dead letters', 'REJECTED', 'other results', 'lost', 'handled twice', 'dead-letter codes'], fuzzRows, [
          'l',
          'r',
          'r',
          'r',
          'r',
          'r',
          'r',
          'l',
        ]),
      );
    }
    if (hostile.length > 0) {
      lines.push('');
      lines.push(
        'Hostile pass (one kind at a time on one partition, a canary behind each; outcomes printed, not judged; a kind fails if a record is lost, a command is called more often than the retry policy allows, or its canary is not answered):',
      );
      lines.push('');
      lines.push(hostileTable(hostile));
    }
    lines.push('');
    // A verdict per priority, then the run's: it passes only if every priority does.
    for (const { priority, what, check } of streams)
      lines.push(
        check.failures.length === 0
          ? `VERDICT ${priority} priority (${what}): PASS — no command lost, none answered twice, none sent twice (per-key order violations: ${fmt(check.order.violations)}).`
          : `VERDICT ${priority} priority (${what}): FAIL — ${check.failures.join('; ')}.`,
      );
    lines.push(
      failures.length === 0
        ? `VERDICT: PASS — ${streams.length > 1 ? 'both priorities pass; ' : ''}no command lost, none answered twice, none sent twice, no fuzz record lost.`
        : `VERDICT: FAIL — ${failures.join('; ')}.`,
    );
    console.log(lines.join('\n'));

    mkdirSync(dirname(JSON_FILE), { recursive: true });
    writeFileSync(
      JSON_FILE,
      JSON.stringify(
        {
          startedAt: new Date(started).toISOString(),
          wallSeconds: (Date.now() - started) / 1000,
          settings: {
            commands: COMMANDS,
            rate: RATE,
            keys: KEYS,
            kills: KILLS,
            outageSec: OUTAGE_SEC,
            fundsPauseSec: FUNDS_PAUSE_SEC,
            fuzz: FUZZ,
            latencyMs: LATENCY_MS,
            seed: SEED,
            sessionTimeoutMs: SESSION_TIMEOUT_MS,
            freezeMs: FREEZE_MS,
            workers: [WORKERS_AT_START, WORKERS_SCALED_UP, WORKERS_SCALED_DOWN],
          },
          timeline,
          // Per priority: what the verdicts are made of.
          priorities: Object.fromEntries(
            streams.map(({ priority, ids, check: c }) => [
              priority,
              {
                commandsIn: c.commandsIn,
                records: c.records,
                resultsOut: c.resultsOut,
                withoutResult: c.missing.length,
                moreThanOneResult: c.duplicated.length,
                sentMoreThanOnce: c.sentTwice.length,
                unknownResults: c.unknownResults,
                orderViolations: c.order.violations,
                orderPairs: c.order.pairs,
                orderExamples: c.order.examples,
                outcomes: Object.fromEntries(outcomesOf(ids)),
                verdict: c.failures.length === 0 ? 'PASS' : 'FAIL',
                failures: c.failures,
              },
            ]),
          ),
          // The normal priority's commands and the whole run's counts, as before the priority topic.
          counts: {
            commandsIn: normalCheck.commandsIn,
            resultsOut: normalCheck.resultsOut,
            withoutResult: normalCheck.missing.length,
            moreThanOneResult: normalCheck.duplicated.length,
            sentMoreThanOnce: sentTwice.length,
            sentMoreThanOnceSandboxCount: sandboxTwice,
            extraSends,
            requestedMoreThanOnce: requestedTwice,
            unknownResults: normalCheck.unknownResults,
            orderViolations: normalCheck.order.violations,
            orderPairs: normalCheck.order.pairs,
            workersStarted: pool.workers.length,
            unplannedExits: pool.unplannedExits,
            undecodableResults,
            uncopiedSandboxRequests: requestLog.abandonedGaps,
            liveReaderRestarts: watcher.restarts + dlqWatcher.restarts,
          },
          blows: blowRows.map((b) => b.json),
          sentTwice: sentTwice.slice(0, 100).map(([id, s]) => ({ id, ...s, partition: partitionOf.get(id), results: (results.get(id) ?? []).map(outcomeOf) })),
          orderExamples: normalCheck.order.examples,
          // Every request of the commands that were sent twice or out of order, for the investigation.
          evidence: [
            ...new Set([
              ...sentTwice.slice(0, 20).map(([id]) => id),
              ...streams.flatMap((st) => st.check.order.violating.flatMap((v) => [v.earlier, v.later])),
            ]),
          ].map((id) => ({
            id,
            partition: partitionOf.get(id),
            results: (results.get(id) ?? []).map(outcomeOf),
            resultVisibleAtSec: firstVisible.has(id) ? ((firstVisible.get(id) ?? 0) - started) / 1000 : null,
            requests: requests
              .filter((r) => r.correlationId === id)
              .map((r) => ({
                seq: r.seq,
                atSec: (r.receivedAt - started) / 1000,
                at: new Date(r.receivedAt).toISOString(),
                httpStatus: r.httpStatus,
                accepted: r.accepted,
              })),
          })),
          outcomes: Object.fromEntries(outcomesOf(commandIds)),
          fuzz: { lost: fuzzLost, handledTwice: fuzzTwice, canariesAnswered, rows: fuzzRows },
          sandbox: sandboxStats,
          verdict: failures.length === 0 ? 'PASS' : 'FAIL',
          failures,
        },
        null,
        2,
      ),
    );
    say(`JSON: ${JSON_FILE}`);
    return failures.length === 0 ? 0 : 1;
  } finally {
    await pool.stopAll().catch(() => undefined);
    await requestLog.stop().catch(() => undefined);
    await backupLog?.stop().catch(() => undefined);
    await sandbox.stop();
    await backup?.stop();
    await stack.stop();
  }
}

/**
 * Both accounts' requests as one log: ordered by arrival (then by each log's own order) and
 * numbered again, so the per-key order check compares requests across the two sandboxes.
 */
function mergedLogs<R extends { seq: number; receivedAt: number }>(first: readonly R[], second: readonly R[]): R[] {
  const tagged = [...first.map((r) => ({ r, log: 0 })), ...second.map((r) => ({ r, log: 1 }))];
  tagged.sort((a, b) => a.r.receivedAt - b.r.receivedAt || a.log - b.log || a.r.seq - b.r.seq);
  return tagged.map(({ r }, n) => ({ ...r, seq: n + 1 }));
}

/** Correlation ids accepted more than once over both accounts' sandboxes, by their own counters. */
async function acceptedTwiceOverBoth(a: SandboxProcess, b: SandboxProcess): Promise<number> {
  const counts = new Map<string, number>();
  for (const sandbox of [a, b]) for (const [id, n] of Object.entries(await sandbox.correlations(1))) counts.set(id, (counts.get(id) ?? 0) + n);
  return [...counts.values()].filter((n) => n > 1).length;
}

exitWith('chaos', main);
