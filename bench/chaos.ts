/**
 * `npm run chaos`: breaks things on purpose and counts what survived.
 *
 * Its own local stack (never a reused one: the broker is restarted), the sandbox and the worker
 * (the shipped CLI) in their own processes. Commands are published at a steady rate while, at
 * seeded random moments, the worker is SIGKILLed (and restarted at once) several times, the
 * broker is restarted once and the sandbox answers 503 to everything for a while. Then a fuzz
 * pass of malformed records, then a read of every topic from the beginning to verify:
 * every command has exactly one committed result; every fuzz record is a dead letter or a
 * REJECTED result. Exit 1 if not.
 *
 *   node bench/chaos.ts [--commands 20000] [--rate 160] [--kills 5] [--outage-sec 30]
 *                       [--fuzz 1000] [--latency-ms 20] [--seed N] [--json FILE]
 */
import { randomUUID } from 'node:crypto';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
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
import { FUZZ_KINDS, fuzzRecord, kindAt, makeCommand, prng, type FuzzKind } from './lib/commands.ts';
import { benchKafka, createTopics, PRODUCED_AT_HEADER } from './lib/kafka.ts';
import { fmt, table } from './lib/markdown.ts';
import { exitWith, REPO_ROOT, sleep, stopChild, type Child } from './lib/proc.ts';
import { readWholeTopic, ResultWatcher } from './lib/results.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { startWorker, workerEnv } from './pipelines/worker.ts';

quietKnownWarnings();

const { values: args } = parseArgs({
  options: {
    commands: { type: 'string', default: '20000' },
    rate: { type: 'string', default: '160' },
    kills: { type: 'string', default: '5' },
    'outage-sec': { type: 'string', default: '30' },
    fuzz: { type: 'string', default: '1000' },
    'latency-ms': { type: 'string', default: '20' },
    seed: { type: 'string' },
    json: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (args.help === true) {
  console.log('node bench/chaos.ts [--commands 20000] [--rate 160] [--kills 5] [--outage-sec 30] [--fuzz 1000] [--latency-ms 20] [--seed N] [--json FILE]');
  process.exit(0);
}
const int = (name: string, raw: string, min = 1): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer ≥ ${min} (got ${raw})`);
  return n;
};
const COMMANDS = int('commands', args.commands);
const RATE = int('rate', args.rate);
const KILLS = int('kills', args.kills, 0);
const OUTAGE_SEC = int('outage-sec', args['outage-sec'], 0);
const FUZZ = int('fuzz', args.fuzz, 0);
const LATENCY_MS = int('latency-ms', args['latency-ms'], 0);
const SEED = args.seed === undefined ? Math.floor(Math.random() * 1_000_000) : int('seed', args.seed);
const PARTITIONS = 12;
const SESSION_TIMEOUT_MS = 10_000;
const CANARIES = 50;
/** After a failed publish (broker restarting): 0.5–1 s, doubling while it keeps failing, up to 4–8 s. */
const PUBLISH_RETRY = { initialMs: 1_000, maxMs: 8_000, jitter: 0.5 } as const;
const stamp = new Date().toISOString().replace(/[:.]/g, '-');
const OUT_DIR = join(REPO_ROOT, 'bench', 'results');
const JSON_FILE = args.json ?? join(OUT_DIR, `chaos-${stamp}.json`);
const LOG_DIR = join(OUT_DIR, `chaos-${stamp}-logs`);

const started = Date.now();
const say = (line: string): void => console.log(`[chaos ${((Date.now() - started) / 1000).toFixed(1).padStart(6)}s] ${line}`);

/** The worker as a supervised child: restarted at once after our kills and after any exit of its own. */
class Supervisor {
  child: Child | undefined;
  generation = 0;
  readonly unplannedExits: string[] = [];
  readonly #env: Record<string, string>;
  #expectingExit = false;
  #stopped = false;

  constructor(env: Record<string, string>) {
    this.#env = env;
  }

  start(): void {
    this.generation += 1;
    const child = startWorker(this.#env);
    const log = createWriteStream(join(LOG_DIR, `worker-${this.generation}.log`));
    child.process.stdout?.pipe(log);
    child.process.stderr?.pipe(log);
    this.child = child;
    const generation = this.generation;
    void child.exited.then(({ code, signal }) => {
      if (this.#stopped || this.#expectingExit || generation !== this.generation) return;
      this.unplannedExits.push(`worker #${generation} exited on its own (code ${code}, signal ${signal}); see ${join(LOG_DIR, `worker-${generation}.log`)}`);
      say(`worker #${generation} exited on its own (code ${code}, signal ${signal}); restarting it`);
      setTimeout(() => {
        if (!this.#stopped) this.start();
      }, 1_000);
    });
    say(`worker #${this.generation} started (pid ${child.pid})`);
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    this.#expectingExit = true;
    child.process.kill('SIGKILL');
    await child.exited;
    this.#expectingExit = false;
    say(`worker #${this.generation} SIGKILLed`);
    this.start();
  }

  async stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    this.#stopped = true;
    return this.child === undefined ? undefined : stopChild(this.child, 60_000);
  }
}

interface ScheduledEvent {
  readonly atSec: number;
  readonly name: string;
  /** Later events move back by the time this one took (a broker restart pauses production too). */
  readonly blocking?: boolean;
  readonly run: () => Promise<void>;
}

async function main(): Promise<number> {
  mkdirSync(LOG_DIR, { recursive: true });
  const random = prng(SEED);
  say(`seed ${SEED}; ${fmt(COMMANDS)} commands at ${RATE}/s, ${KILLS} SIGKILLs, 1 broker restart, sandbox 503 for ${OUTAGE_SEC} s, ${FUZZ} fuzz records; logs in ${LOG_DIR}`);
  say('starting a local Kafka + registry of its own (not reused: the broker gets restarted)…');
  const stack = await startStack({ reuse: false, log: say });
  const restartKafka = stack.restartKafka;
  if (restartKafka === undefined) {
    await stack.stop();
    throw new Error(`chaos needs a local stack it can restart (got mode ${stack.mode}); unset KAFKA_BROKERS/SCHEMA_REGISTRY_URL and SMS_WORKER_STACK=docker`);
  }
  say(`stack (${stack.mode}): ${stack.description}`);
  const sandbox = await SandboxProcess.start(['--log-capacity', '1000', '--balance', '1000000000.000000', ...(LATENCY_MS > 0 ? ['--latency-ms', String(LATENCY_MS)] : [])]);
  say(`sandbox at ${sandbox.url} (latency ${LATENCY_MS} ms)`);
  const kafka = benchKafka(stack.kafkaBrokers, 'chaos-orchestrator');
  const registry = createRegistry(stack.schemaRegistryUrl);
  const run = randomUUID().slice(0, 6);
  const topics = { commands: `chaos.${run}.commands`, results: `chaos.${run}.results`, deadLetter: `chaos.${run}.dlq` };
  await createTopics(kafka, [
    { topic: topics.commands, partitions: PARTITIONS },
    { topic: topics.results, partitions: PARTITIONS },
    { topic: topics.deadLetter, partitions: 1 },
  ]);
  const supervisor = new Supervisor(
    workerEnv(
      { brokers: stack.kafkaBrokers, registryUrl: stack.schemaRegistryUrl, providerUrl: sandbox.url, commands: topics.commands, results: topics.results, deadLetter: topics.deadLetter, group: `chaos-${run}` },
      { KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS) },
    ),
  );
  const watcher = new ResultWatcher(kafka, topics.results);
  const dlqWatcher = new ResultWatcher(kafka, topics.deadLetter);
  const publisher = new CommandPublisher(kafka, registry, topics.commands);
  const timeline: string[] = [];
  const note = (line: string): void => {
    timeline.push(`${((Date.now() - started) / 1000).toFixed(1)} s: ${line}`);
    say(line);
  };
  try {
    await Promise.all([watcher.start(), dlqWatcher.start(), publisher.connect()]);
    supervisor.start();

    // Publishing at a steady rate, paused while the broker restarts.
    let paused = false;
    let published = 0;
    let publishErrors = 0;
    let failuresInARow = 0;
    const ids: string[] = [];
    const productionSec = COMMANDS / RATE;
    const publishing = (async () => {
      const tickMs = 250;
      const perTick = Math.max(1, Math.round((RATE * tickMs) / 1000));
      const t0 = Date.now();
      let tick = 0;
      while (published < COMMANDS) {
        tick += 1;
        const due = t0 + tick * tickMs;
        if (due > Date.now()) await sleep(due - Date.now());
        if (paused) continue;
        const batch = [];
        for (let i = 0; i < perTick && published + i < COMMANDS; i += 1) {
          const commandId = `c-${run}-${published + i}`;
          batch.push({ key: commandId, value: await publisher.encode(makeCommand(commandId, kindAt(random), random)), headers: { [PRODUCED_AT_HEADER]: String(Date.now()) } });
        }
        try {
          await publisher.publishRaw(batch);
          for (const r of batch) ids.push(r.key);
          published += batch.length;
          failuresInARow = 0;
        } catch (error) {
          // Retried with the next tick; a batch that did land before the error may then exist twice.
          publishErrors += 1;
          failuresInARow += 1;
          say(`publish failed (will retry): ${error instanceof Error ? error.message : String(error)}`);
          await sleep(backoffDelay(failuresInARow, PUBLISH_RETRY));
        }
      }
    })();

    // Fault schedule (seconds after the start of production), drawn from the seed.
    const within = (from: number, to: number): number => from + random() * (to - from);
    const span = productionSec;
    const events: ScheduledEvent[] = [];
    const killWindows = Array.from({ length: KILLS }, (_, i) => [0.05 + (0.9 * i) / Math.max(1, KILLS), 0.05 + (0.9 * (i + 1)) / Math.max(1, KILLS) - 0.04] as const);
    killWindows.forEach(([a, b], i) =>
      events.push({ atSec: within(a * span, b * span), name: `SIGKILL #${i + 1}`, run: async () => {
        note(`SIGKILL worker #${supervisor.generation} (results so far ${fmt(watcher.distinct)}), restarting it at once`);
        await supervisor.kill();
      } }),
    );
    const brokerAt = within(0.3 * span, 0.4 * span);
    events.push({
      atSec: brokerAt,
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
    const outageAt = within(0.55 * span, 0.62 * span);
    let outageOver: Promise<void> = Promise.resolve();
    if (OUTAGE_SEC > 0) {
      events.push({
        atSec: outageAt,
        name: `sandbox down for ${OUTAGE_SEC} s`,
        run: async () => {
          await sandbox.faults({ down: true });
          note(`sandbox down: 503 to every request for ${OUTAGE_SEC} s`);
          outageOver = sleep(OUTAGE_SEC * 1000).then(async () => {
            await sandbox.faults({ down: false });
            note('sandbox up again');
          });
        },
      });
    }
    events.sort((a, b) => a.atSec - b.atSec);
    say(`schedule: ${events.map((e) => `${e.name} @${e.atSec.toFixed(1)} s`).join(', ')} after the start of production (≈ ${fmt(productionSec)} s long); later events move back by the broker's restart time`);
    const productionStart = Date.now();
    let shiftMs = 0;
    for (const event of events) {
      const due = productionStart + event.atSec * 1000 + shiftMs;
      if (due > Date.now()) await sleep(due - Date.now());
      const began = Date.now();
      await event.run();
      if (event.blocking === true) shiftMs += Date.now() - began;
    }
    await outageOver;
    await publishing;
    note(`all ${fmt(published)} commands published (${publishErrors} publish errors retried)`);

    // Wait until every command has a result.
    const want = new Set(ids);
    const have = (): number => {
      let n = 0;
      for (const id of want) if (watcher.perKey.has(id)) n += 1;
      return n;
    };
    let lastLog = Date.now();
    const complete = await watcher.waitUntil(() => have() >= want.size, 600_000, () => {
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        say(`waiting for results: ${fmt(have())}/${fmt(want.size)}`);
      }
    });
    note(complete ? `every command has a result (live reader)` : `deadline passed with ${fmt(have())}/${fmt(want.size)} results (live reader); verifying from the topic`);

    // Fuzz pass: malformed records, then canaries that must still get results.
    const fuzzKeys = new Map<string, FuzzKind>();
    const fuzzFirstGeneration = supervisor.generation;
    const exitsBeforeFuzz = supervisor.unplannedExits.length;
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

    const stopped = await supervisor.stop();
    note(`worker #${supervisor.generation} stopped with SIGTERM: exit ${stopped?.code ?? '?'}${stopped?.signal === null || stopped === undefined ? '' : ` (signal ${stopped.signal})`}`);
    await Promise.all([watcher.stop(), dlqWatcher.stop()]);
    await publisher.disconnect();

    // Verification from the topics themselves, read from the beginning by fresh consumers.
    say('reading the command, result and dead-letter topics from the beginning…');
    const [commandRecords, resultRecords, deadRecords] = await Promise.all([
      readWholeTopic(kafka, topics.commands),
      readWholeTopic(kafka, topics.results),
      readWholeTopic(kafka, topics.deadLetter),
    ]);
    const isCommand = (key: string): boolean => key.startsWith(`c-${run}-`);
    const recordsPerCommand = new Map<string, number>();
    for (const r of commandRecords) if (isCommand(r.key)) recordsPerCommand.set(r.key, (recordsPerCommand.get(r.key) ?? 0) + 1);
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

    const commandIds = [...recordsPerCommand.keys()];
    const missing = commandIds.filter((id) => (results.get(id)?.length ?? 0) === 0);
    const duplicated = commandIds.filter((id) => (results.get(id)?.length ?? 0) > 1);
    const beyondRecords = commandIds.filter((id) => (results.get(id)?.length ?? 0) > (recordsPerCommand.get(id) ?? 0));
    const resultsOut = commandIds.reduce((n, id) => n + (results.get(id)?.length ?? 0), 0);
    const outcomes = new Map<string, number>();
    for (const id of commandIds) for (const r of results.get(id) ?? []) outcomes.set(`${r.outcome}${r.error === null ? '' : ` ${r.error.code}`}`, (outcomes.get(`${r.outcome}${r.error === null ? '' : ` ${r.error.code}`}`) ?? 0) + 1);
    const correlations = await sandbox.correlations(2);
    const sentTwice = Object.entries(correlations).filter(([id]) => isCommand(id));
    const extraSends = sentTwice.reduce((n, [, count]) => n + count - 1, 0);
    const sandboxStats = await sandbox.stats();

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
      fuzzRows.push([kind, fmt(keys.length), fmt(dead), fmt(rejected), fmt(other), fmt(lost), fmt(twice), [...codes.entries()].map(([c, n]) => `${c} ${n}`).join(', ')]);
    }
    const canaryIds = Array.from({ length: FUZZ > 0 ? CANARIES : 0 }, (_, i) => `canary-${run}-${i}`);
    const canariesAnswered = canaryIds.filter((id) => (results.get(id)?.length ?? 0) === 1).length;
    const crashesDuringFuzz = supervisor.unplannedExits.length - exitsBeforeFuzz;

    const lines: string[] = [];
    lines.push('');
    lines.push('## Chaos run: verification');
    lines.push('');
    lines.push(`Machine: ${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, ${fmt(totalmem() / 1024 ** 3)} GiB, Node ${process.version}; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')}. Seed ${SEED}. Wall time ${fmt((Date.now() - started) / 1000)} s.`);
    lines.push('');
    lines.push('Timeline:');
    for (const t of timeline) lines.push(`- ${t}`);
    lines.push('');
    lines.push(table(['check', 'count', 'expected'], [
      ['commands in (distinct ids in the command topic)', fmt(commandIds.length), fmt(COMMANDS)],
      ['command records (a publish retried after an error may repeat one)', fmt([...recordsPerCommand.values()].reduce((a, b) => a + b, 0)), fmt(COMMANDS)],
      ['results out (committed, for those commands)', fmt(resultsOut), fmt(commandIds.length)],
      ['**commands without a result**', `**${fmt(missing.length)}**`, '0'],
      ['**commands with more than one committed result**', `**${fmt(duplicated.length)}**`, '0'],
      ['… of which more results than command records', fmt(beyondRecords.length), '0'],
      ['commands the service accepted more than once (sandbox, by correlation id)', fmt(sentTwice.length), 'honest count; 0 is the goal'],
      ['… extra sends in total', fmt(extraSends), ''],
      ['worker SIGKILLs / restarts', `${KILLS} / ${supervisor.generation - 1}`, ''],
      ['worker exits we did not cause', fmt(supervisor.unplannedExits.length), '0'],
      ['result records that do not decode', fmt(undecodableResults), '0'],
    ], ['l', 'r', 'l']));
    lines.push('');
    lines.push(`Outcomes of the commands' results: ${[...outcomes.entries()].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k}: ${fmt(n)}`).join(' · ')}`);
    lines.push(`Sandbox: ${fmt(sandboxStats.requests)} requests, by HTTP status ${JSON.stringify(sandboxStats.byHttpStatus)}, accepted sends ${fmt(sandboxStats.acceptedSends)}, duplicate sends ${fmt(sandboxStats.duplicateSends)} over ${fmt(sandboxStats.duplicateCorrelationIds)} ids.`);
    if (sentTwice.length > 0) lines.push(`Sent more than once (first 10): ${sentTwice.slice(0, 10).map(([id, n]) => `${id} ×${n}`).join(', ')}`);
    if (missing.length > 0) lines.push(`Without a result (first 10): ${missing.slice(0, 10).join(', ')}`);
    if (duplicated.length > 0) lines.push(`More than one result (first 10): ${duplicated.slice(0, 10).map((id) => `${id} ×${results.get(id)?.length ?? 0}`).join(', ')}`);
    for (const exit of supervisor.unplannedExits) lines.push(`Unplanned: ${exit}`);
    if (FUZZ > 0) {
      lines.push('');
      lines.push(`Fuzz pass: ${FUZZ} malformed records; the worker ${crashesDuringFuzz === 0 ? 'stayed up' : `exited ${crashesDuringFuzz} time(s)`} (worker #${fuzzFirstGeneration} throughout: ${supervisor.generation === fuzzFirstGeneration ? 'yes' : 'no'}); canaries answered after it: ${canariesAnswered}/${CANARIES}.`);
      lines.push('');
      lines.push(table(['kind', 'records', 'dead letters', 'REJECTED', 'other results', 'lost', 'handled twice', 'dead-letter codes'], fuzzRows, ['l', 'r', 'r', 'r', 'r', 'r', 'r', 'l']));
    }
    const failures: string[] = [];
    if (missing.length > 0) failures.push(`${missing.length} commands without a result`);
    if (duplicated.length > 0) failures.push(`${duplicated.length} commands with more than one result`);
    if (fuzzLost > 0) failures.push(`${fuzzLost} fuzz records lost`);
    if (fuzzTwice > 0) failures.push(`${fuzzTwice} fuzz records handled twice`);
    if (canariesAnswered < canaryIds.length) failures.push(`${canaryIds.length - canariesAnswered} canaries unanswered after the fuzz pass`);
    if (commandIds.length < COMMANDS) failures.push(`only ${commandIds.length} of ${COMMANDS} commands reached the command topic`);
    lines.push('');
    lines.push(failures.length === 0 ? 'VERDICT: PASS — no command lost, none answered twice, no fuzz record lost.' : `VERDICT: FAIL — ${failures.join('; ')}.`);
    console.log(lines.join('\n'));

    mkdirSync(dirname(JSON_FILE), { recursive: true });
    writeFileSync(
      JSON_FILE,
      JSON.stringify(
        {
          startedAt: new Date(started).toISOString(),
          wallSeconds: (Date.now() - started) / 1000,
          settings: { commands: COMMANDS, rate: RATE, kills: KILLS, outageSec: OUTAGE_SEC, fuzz: FUZZ, latencyMs: LATENCY_MS, seed: SEED, sessionTimeoutMs: SESSION_TIMEOUT_MS },
          timeline,
          counts: { commandsIn: commandIds.length, resultsOut, withoutResult: missing.length, moreThanOneResult: duplicated.length, sentMoreThanOnce: sentTwice.length, extraSends, unplannedExits: supervisor.unplannedExits, undecodableResults },
          outcomes: Object.fromEntries(outcomes),
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
    await supervisor.stop().catch(() => undefined);
    await sandbox.stop();
    await stack.stop();
  }
}

exitWith('chaos', main);
