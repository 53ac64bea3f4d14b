/**
 * A worker's first minute (issue 53, item 3): a fresh worker on fresh topics (or, with --restart,
 * on the topics, group and transactional ids an earlier worker worked for a few seconds), under
 * the open loop's load from the moment its /readyz answers 200, time to send over its first
 * `--seconds`, with the ledger on and off in pairs (each run its own topics and ids; the order
 * alternates from pair to pair), judged on the median of the pairs with the min and max beside it.
 *
 *   SMS_WORKER_STACK=local node bench/first-minute.ts [--pairs 5] [--seconds 60] [--rate 300]
 *     [--broker-warm-up 90] [--restart] [--worker-cpu-limit CORES] [--json FILE]
 *
 * `--worker-cpu-limit` runs each worker as a pod with that CPU limit runs (a cgroup's CFS quota:
 * cpu-quota.ts), the broker, registry, sandbox and harness outside it (issue 53, item 2: whether
 * that narrows the spread from run to run).
 *
 * Before the pairs, one throwaway ledger-on worker runs the same load for `--broker-warm-up`
 * seconds (0: none), because a freshly started broker answers transactions slowly for a minute
 * or more (bench/README.md, the eighteenth session): the pods of a deployment start against a
 * broker that has been serving transactions for days, and what this measures is the pod's first
 * minute, not the broker's. Time to send = the sandbox's receive time of a command's first
 * request − its publish time (open-loop.ts). Targets (issue 53): ledger on p50 ≤ 15 ms and p99 ≤
 * 2 × the same pair's ledger-off p99.
 */
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack } from '../tools/stack/index.ts';
import { benchKafka, createTopics, deleteTopics } from './lib/kafka.ts';
import { CpuQuota } from './lib/cpu-quota.ts';
import { machineNote, MachineCpuSampler, type MachineLoad } from './lib/machine-cpu.ts';
import { fmt, ms } from './lib/markdown.ts';
import { publishAtRate } from './lib/open-loop.ts';
import { exitWith, sleep, stopChild } from './lib/proc.ts';
import { RequestLogCollector } from './lib/request-log.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { median, percentile, sortedNumbers } from './lib/stats.ts';
import { freePort, startWorker, waitReady, workerEnv } from './pipelines/worker.ts';

const { values: args } = parseArgs({
  options: {
    pairs: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '60' },
    rate: { type: 'string', default: '300' },
    'broker-warm-up': { type: 'string', default: '90' },
    restart: { type: 'boolean', default: false },
    'worker-cpu-limit': { type: 'string' },
    json: { type: 'string' },
  },
});

/** The targets of issue 53 for the first minute. */
const LEDGER_P50_TARGET_MS = 15;
const P99_RATIO_TARGET = 2;
/** The windows the minute is cut into for the per-window medians. */
const WINDOW_SECONDS = 10;
/** The open loop's upstream: log-normal, p50 50 ms, p99 500 ms. */
const LATENCY = { kind: 'lognormal', medianMs: 50, p99Ms: 500 } as const;
/** Seconds an earlier worker works on the run's topics before the measured one starts (--restart). */
const EARLIER_SECONDS = 5;

interface RunFigures {
  readonly ledger: boolean;
  readonly published: number;
  readonly sent: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** p50 of the commands published in each WINDOW_SECONDS window after /readyz. */
  readonly p50ByWindowMs: readonly number[];
  readonly readyMs: number;
  readonly machine: MachineLoad;
}

interface Context {
  readonly kafka: Kafka;
  readonly registry: SchemaRegistry;
  readonly sandbox: SandboxProcess;
  readonly brokers: string;
  readonly registryUrl: string;
  readonly rate: number;
  /** The workers' CPU limit (--worker-cpu-limit), or none. */
  readonly quota: CpuQuota | undefined;
}

/** One worker's first `seconds` on topics of its own (after an earlier worker's few seconds with `restart`). */
async function runOne(ctx: Context, ledger: boolean, seconds: number, restart: boolean): Promise<RunFigures> {
  const id = randomUUID().slice(0, 6);
  const commands = `first.${id}.commands`;
  const results = `first.${id}.results`;
  const topics = [commands, results, `${results}.dlq`, `${commands}.ledger`];
  await createTopics(ctx.kafka, [
    { topic: commands, partitions: 12 },
    { topic: results, partitions: 12 },
    { topic: `${results}.dlq`, partitions: 1 },
  ]);
  const settings = {
    brokers: ctx.brokers,
    registryUrl: ctx.registryUrl,
    providerUrl: ctx.sandbox.url,
    commands,
    results,
    deadLetter: `${results}.dlq`,
    group: `first-${id}`,
  };
  const env = { LEDGER_ENABLED: String(ledger) };
  // An empty request log per run: a collector starting from the first request of the sandbox's
  // life read every earlier run's too, and serialising them slowed the sandbox's receive times
  // (pairs 3 to 5 of the first try: ledger off p50 21 ms, ledger on 53–58 ms over the whole minute).
  await ctx.sandbox.reset();
  await ctx.sandbox.setLatencySpec(LATENCY);
  const log = new RequestLogCollector(ctx.sandbox, { intervalMs: 500 });
  log.start();
  try {
    if (restart) {
      const port = await freePort();
      const earlier = startWorker(workerEnv(settings, { ...env, HTTP_PORT: String(port) }));
      ctx.quota?.add(earlier.pid);
      try {
        await waitReady(port, earlier, 120_000);
        await publishAtRate({
          kafka: ctx.kafka,
          registry: ctx.registry,
          topic: commands,
          rate: ctx.rate,
          seconds: EARLIER_SECONDS,
          idPrefix: `e${id}`,
          seed: 12,
        });
        await sleep(2_000);
      } finally {
        await stopChild(earlier);
      }
    }
    const port = await freePort();
    const started = Date.now();
    const worker = startWorker(workerEnv(settings, { ...env, HTTP_PORT: String(port) }));
    ctx.quota?.add(worker.pid);
    try {
      await waitReady(port, worker, 120_000);
      const readyAt = Date.now();
      const machine = new MachineCpuSampler();
      const { publishedAt } = await publishAtRate({
        kafka: ctx.kafka,
        registry: ctx.registry,
        topic: commands,
        rate: ctx.rate,
        seconds,
        idPrefix: `m${id}`,
        seed: 11,
      });
      const publishedUntil = Date.now();
      machine.stop();
      const load: MachineLoad = { busyShare: machine.busyShare(machine.samples[0]?.at ?? readyAt, publishedUntil), cores: machine.cores };
      await sleep(3_000);
      await log.poll();
      const first = new Map<string, number>();
      for (const r of log.all()) if (r.correlationId !== undefined && !first.has(r.correlationId)) first.set(r.correlationId, r.receivedAt);
      const timed = [...publishedAt].flatMap(([cid, at]) => (first.has(cid) ? [{ at, ms: (first.get(cid) as number) - at }] : []));
      const all = sortedNumbers(timed.map((t) => t.ms));
      const windows = Array.from({ length: Math.ceil(seconds / WINDOW_SECONDS) }, (_, w) =>
        sortedNumbers(timed.filter((t) => t.at >= readyAt + w * WINDOW_SECONDS * 1000 && t.at < readyAt + (w + 1) * WINDOW_SECONDS * 1000).map((t) => t.ms)),
      );
      return {
        ledger,
        published: publishedAt.size,
        sent: all.length,
        p50Ms: percentile(all, 50),
        p99Ms: percentile(all, 99),
        maxMs: all.at(-1) ?? 0,
        p50ByWindowMs: windows.map((w) => (w.length === 0 ? 0 : percentile(w, 50))),
        readyMs: readyAt - started,
        machine: load,
      };
    } finally {
      await stopChild(worker);
    }
  } finally {
    await log.stop();
    await deleteTopics(ctx.kafka, topics).catch(() => undefined);
  }
}

const spread = (values: readonly number[]): string => {
  const sorted = sortedNumbers([...values]);
  return `${ms(median(sorted))} (${ms(sorted[0] ?? 0)}–${ms(sorted.at(-1) ?? 0)})`;
};

function runLine(f: RunFigures): string {
  return `ledger ${f.ledger ? 'on ' : 'off'}: ${fmt(f.sent)}/${fmt(f.published)} sent, p50 ${ms(f.p50Ms)}, p99 ${ms(f.p99Ms)}, max ${ms(f.maxMs)}; p50 by ${WINDOW_SECONDS} s ${f.p50ByWindowMs.map((v) => fmt(v)).join(', ')} ms; /readyz after ${ms(f.readyMs)}${machineNote(f.machine)}`;
}

async function main(): Promise<number> {
  const pairs = Number(args.pairs);
  const seconds = Number(args.seconds);
  const rate = Number(args.rate);
  const warmUp = Number(args['broker-warm-up']);
  const cpuLimit = args['worker-cpu-limit'] === undefined ? undefined : Number(args['worker-cpu-limit']);
  const quota = cpuLimit === undefined ? undefined : CpuQuota.create(cpuLimit);
  const stack = await startStack({ log: () => undefined });
  const sandbox = await SandboxProcess.start(['--log-capacity', '200000', '--balance', '1000000000.000000']);
  const kafka = benchKafka(stack.kafkaBrokers, 'first-minute');
  try {
    const ctx: Context = {
      kafka,
      registry: createRegistry(stack.schemaRegistryUrl),
      sandbox,
      brokers: stack.kafkaBrokers,
      registryUrl: stack.schemaRegistryUrl,
      rate,
      quota,
    };
    console.log(
      `first minute: ${pairs} pairs × ${seconds} s at ${rate} commands/s (log-normal upstream p50 50 / p99 500 ms), ${args.restart ? `a restart (an earlier worker ${EARLIER_SECONDS} s on the same topics and ids)` : 'fresh topics and ids'}${cpuLimit === undefined ? '' : `, each worker limited to ${cpuLimit} CPU`}`,
    );
    if (warmUp > 0) console.log(`broker warm-up (thrown away): ${runLine(await runOne(ctx, true, warmUp, false))}`);
    const runs: { on: RunFigures; off: RunFigures }[] = [];
    for (let pair = 1; pair <= pairs; pair++) {
      const order = pair % 2 === 1 ? [true, false] : [false, true];
      const done = new Map<boolean, RunFigures>();
      for (const ledger of order) {
        const figures = await runOne(ctx, ledger, seconds, args.restart);
        console.log(`  pair ${pair}, ${runLine(figures)}`);
        done.set(ledger, figures);
      }
      runs.push({ on: done.get(true) as RunFigures, off: done.get(false) as RunFigures });
    }
    const on = runs.map((r) => r.on);
    const off = runs.map((r) => r.off);
    const ratios = runs.map((r) => r.on.p99Ms / Math.max(1, r.off.p99Ms));
    const p50On = median(sortedNumbers(on.map((f) => f.p50Ms)));
    const ratio = median(sortedNumbers(ratios));
    console.log(`median of ${pairs} pairs (min–max):`);
    console.log(`  ledger on:  p50 ${spread(on.map((f) => f.p50Ms))}, p99 ${spread(on.map((f) => f.p99Ms))}, max ${spread(on.map((f) => f.maxMs))}`);
    console.log(`  ledger off: p50 ${spread(off.map((f) => f.p50Ms))}, p99 ${spread(off.map((f) => f.p99Ms))}, max ${spread(off.map((f) => f.maxMs))}`);
    for (let w = 0; w < Math.ceil(seconds / WINDOW_SECONDS); w++)
      console.log(
        `  ${w * WINDOW_SECONDS}–${(w + 1) * WINDOW_SECONDS} s: p50 on ${spread(on.map((f) => f.p50ByWindowMs[w] ?? 0))}, off ${spread(off.map((f) => f.p50ByWindowMs[w] ?? 0))}`,
      );
    console.log(
      `  targets: ledger-on p50 ≤ ${LEDGER_P50_TARGET_MS} ms: ${ms(p50On)} ${p50On <= LEDGER_P50_TARGET_MS ? 'met' : 'NOT met'}; p99 on ÷ off ≤ ${P99_RATIO_TARGET}: ${ratio.toFixed(1)}× (${ratios.map((r) => r.toFixed(1)).join(', ')}) ${ratio <= P99_RATIO_TARGET ? 'met' : 'NOT met'}`,
    );
    if (quota !== undefined) {
      const { periods, throttled } = quota.throttling();
      console.log(`  the workers' CPU limit throttled them in ${fmt(throttled)} of ${fmt(periods)} periods of 100 ms`);
    }
    if (args.json !== undefined)
      writeFileSync(args.json, JSON.stringify({ pairs, seconds, rate, restart: args.restart, brokerWarmUpSeconds: warmUp, cpuLimit, runs }, null, 2));
    return 0;
  } finally {
    await sandbox.stop();
    await stack.stop();
    quota?.close();
  }
}

exitWith('first-minute', main);
