/**
 * Where a fresh worker's first seconds go (issue 23, item 3): one worker (defaults, LOG_LEVEL=debug)
 * started under the open loop's load, its log's start-up steps with their times from the process's
 * start, and the time to send per second after /readyz. Not part of `npm run bench`.
 *
 *   SMS_WORKER_STACK=local node bench/startup-trace.ts [--rate 300] [--seconds 20] [--prepublish] [--restart] [--worker-env KEY=value,…]
 *
 * With --prepublish the load starts before the worker (a pod joining a group under traffic);
 * without it, at /readyz (as the start-up section). With --restart an earlier worker works on the
 * same topics, group and transactional ids for a few seconds and stops before the measured one
 * starts (a pod of a running deployment, not a fresh install).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack } from '../tools/stack/index.ts';
import { benchKafka, createTopics, deleteTopics } from './lib/kafka.ts';
import { fmt, ms } from './lib/markdown.ts';
import { publishAtRate } from './lib/open-loop.ts';
import { exitWith, sleep, stopChild } from './lib/proc.ts';
import { RequestLogCollector } from './lib/request-log.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { percentile, sortedNumbers } from './lib/stats.ts';
import { freePort, startWorker, waitReady, workerEnv } from './pipelines/worker.ts';

const { values: args } = parseArgs({
  options: {
    rate: { type: 'string', default: '300' },
    seconds: { type: 'string', default: '20' },
    prepublish: { type: 'boolean', default: false },
    restart: { type: 'boolean', default: false },
    // Settings of the measured worker only (e.g. NODE_OPTIONS for a V8 flag), on top of its defaults.
    'worker-env': { type: 'string', default: '' },
  },
});

/** Log messages worth a line in the timeline (the first of each, and every 'partition claimed'). */
const STEPS = [
  'configuration loaded',
  'registered result and dead-letter schemas',
  'warmed up',
  'worker started',
  'joined consumer group',
  'partition claimed',
  'ready: first partitions claimed',
];

async function main(): Promise<number> {
  const stack = await startStack({ log: () => undefined });
  const sandbox = await SandboxProcess.start(['--log-capacity', '50000', '--balance', '1000000000.000000']);
  const kafka = benchKafka(stack.kafkaBrokers, 'startup-trace');
  const registry = createRegistry(stack.schemaRegistryUrl);
  const id = randomUUID().slice(0, 6);
  const input = `trace.${id}.commands`;
  const output = `trace.${id}.results`;
  const topics = [input, output, `${output}.dlq`, `${output}.ledger`];
  await createTopics(kafka, [
    { topic: input, partitions: 12 },
    { topic: output, partitions: 12 },
    { topic: `${output}.dlq`, partitions: 1 },
  ]);
  await sandbox.setLatencySpec({ kind: 'lognormal', medianMs: 50, p99Ms: 500 });
  const log = new RequestLogCollector(sandbox, { intervalMs: 500 });
  log.start();
  const port = await freePort();
  const rate = Number(args.rate);
  const seconds = Number(args.seconds);
  let publishing: ReturnType<typeof publishAtRate> | undefined;
  const publish = (): ReturnType<typeof publishAtRate> => publishAtRate({ kafka, registry, topic: input, rate, seconds, idPrefix: `t${id}`, seed: 11 });
  const workerSettings = {
    brokers: stack.kafkaBrokers,
    registryUrl: stack.schemaRegistryUrl,
    providerUrl: sandbox.url,
    commands: input,
    results: output,
    deadLetter: `${output}.dlq`,
    group: `trace-${id}`,
  };
  if (args.restart) {
    // A pod of a running deployment: its topics, group and transactional ids exist. An earlier
    // worker works through 3 s of the same load first, then stops; the measured one starts after.
    const earlierPort = await freePort();
    const earlier = startWorker(workerEnv(workerSettings, { LEDGER_TOPIC: `${output}.ledger`, HTTP_PORT: String(earlierPort) }));
    await waitReady(earlierPort, earlier, 120_000);
    await publishAtRate({ kafka, registry, topic: input, rate, seconds: 3, idPrefix: `e${id}`, seed: 12 });
    await sleep(2_000);
    await stopChild(earlier);
    console.log('an earlier worker ran 3 s of the load on the same topics, group and transactional ids, and stopped');
  }
  if (args.prepublish) publishing = publish();
  const startedAt = Date.now();
  const measuredEnv = Object.fromEntries(
    args['worker-env']
      .split(',')
      .filter((kv) => kv.includes('='))
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const worker = startWorker(workerEnv(workerSettings, { LEDGER_TOPIC: `${output}.ledger`, HTTP_PORT: String(port), LOG_LEVEL: 'debug', ...measuredEnv }));
  try {
    await waitReady(port, worker, 120_000);
    const readyAt = Date.now();
    publishing ??= publish();
    const { publishedAt } = await publishing;
    await sleep(3_000);
    await log.stop();
    const first = new Map<string, number>();
    for (const r of log.all()) if (r.correlationId !== undefined && !first.has(r.correlationId)) first.set(r.correlationId, r.receivedAt);
    console.log(`worker started at 0; /readyz 200 seen at ${ms(readyAt - startedAt)}`);
    const seen = new Set<string>();
    for (const line of worker.lines) {
      let entry: { time?: string; msg?: string; ms?: number; partition?: number };
      try {
        entry = JSON.parse(line) as typeof entry;
      } catch {
        continue;
      }
      const msg = entry.msg ?? '';
      const step = STEPS.find((s) => msg.startsWith(s));
      if (step === undefined || entry.time === undefined || (seen.has(step) && step !== 'partition claimed')) continue;
      seen.add(step);
      const extra = entry.ms === undefined ? '' : ` (${entry.partition === undefined ? '' : `partition ${entry.partition}, `}${entry.ms} ms)`;
      console.log(`+${ms(Date.parse(entry.time) - startedAt)} ${msg}${extra}`);
    }
    const firstPublish = Math.min(...publishedAt.values());
    console.log(
      `load from +${ms(firstPublish - startedAt)} (${args.prepublish ? 'before the worker started' : 'at /readyz'}), ${rate}/s; time to send by publish second after /readyz:`,
    );
    for (let s = args.prepublish ? -Math.ceil((readyAt - firstPublish) / 1000) : 0; s < seconds; s += 1) {
      const sends = sortedNumbers(
        [...publishedAt]
          .filter(([, at]) => at >= readyAt + s * 1000 && at < readyAt + (s + 1) * 1000)
          .flatMap(([cid, at]) => (first.has(cid) ? [(first.get(cid) as number) - at] : [])),
      );
      if (sends.length > 0)
        console.log(
          `  ${s} s: ${fmt(sends.length)} sent, p50 ${ms(percentile(sends, 50))}, p99 ${ms(percentile(sends, 99))}, max ${ms(sends.at(-1) as number)}`,
        );
    }
    return 0;
  } finally {
    await stopChild(worker);
    await log.stop().catch(() => undefined);
    await sandbox.stop();
    await deleteTopics(kafka, topics).catch(() => undefined);
    await stack.stop();
  }
}

exitWith('startup-trace', main);
