/**
 * What a failover costs (docs/accounts.md): two accounts, `default` without an AU route and
 * `backup` with one, each a sandbox process with the same fixed latency. The open loop's mix is
 * published with a share of AU texts; `default` refuses each AU text (101301) and it goes on to
 * `backup`. Time to send = the receive time of the request that was accepted − the publish time.
 * The claim: a command that fails over adds at most one refused round trip (one answer of
 * `default`, `--latency-ms`) to its time to send, judged on the median of `--runs` runs.
 *
 *   node bench/failover.ts [--runs 5] [--seconds 20] [--rate 50] [--au-share 0.2] [--latency-ms 50]
 *
 * Uses the running stack (`npm run stack:up`, KAFKA_BROKERS/SCHEMA_REGISTRY_URL) or starts one.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createRegistry } from '../src/schema/codec.ts';
import { startStack } from '../tools/stack/index.ts';
import { benchKafka, createTopics, deleteTopics } from './lib/kafka.ts';
import { fmt, ms } from './lib/markdown.ts';
import { publishAtRate } from './lib/open-loop.ts';
import { exitWith, sleep, stopChild } from './lib/proc.ts';
import { RequestLogCollector, type LoggedRequest } from './lib/request-log.ts';
import { SandboxProcess } from './lib/sandbox.ts';
import { median, percentile, sortedNumbers } from './lib/stats.ts';
import { freePort, startWorker, waitReady, workerEnv } from './pipelines/worker.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    seconds: { type: 'string', default: '20' },
    rate: { type: 'string', default: '50' },
    'au-share': { type: 'string', default: '0.2' },
    'latency-ms': { type: 'string', default: '50' },
  },
});

interface RunFigures {
  readonly direct: readonly number[];
  readonly failedOver: readonly number[];
  /** AU texts whose accepted request was not on backup after one refusal on default (should be 0). */
  readonly odd: number;
}

async function main(): Promise<number> {
  const runs = Number(args.runs);
  const seconds = Number(args.seconds);
  const rate = Number(args.rate);
  const share = Number(args['au-share']);
  const latencyMs = Number(args['latency-ms']);
  const stack = await startStack({ log: () => undefined });
  const flags = ['--log-capacity', '200000', '--balance', '1000000000.000000', '--latency-ms', String(latencyMs)];
  const primary = await SandboxProcess.start(flags);
  const backup = await SandboxProcess.start([...flags, '--text-route', 'AU=au.backup:0.090000']);
  const kafka = benchKafka(stack.kafkaBrokers, 'failover-bench');
  const registry = createRegistry(stack.schemaRegistryUrl);
  console.log(`failover: ${runs} runs × ${seconds} s at ${rate} commands/s, ${share * 100}% AU texts; both accounts answer after ${latencyMs} ms`);
  const all: RunFigures[] = [];
  try {
    for (let run = 1; run <= runs; run++) {
      const id = randomUUID().slice(0, 6);
      const commands = `failover.${id}.commands`;
      const results = `failover.${id}.results`;
      await createTopics(kafka, [
        { topic: commands, partitions: 12 },
        { topic: results, partitions: 12 },
        { topic: `${results}.dlq`, partitions: 1 },
      ]);
      await Promise.all([primary.reset(), backup.reset()]);
      await Promise.all([primary.setLatency(latencyMs), backup.setLatency(latencyMs)]);
      const logs = [new RequestLogCollector(primary, { intervalMs: 500 }), new RequestLogCollector(backup, { intervalMs: 500 })] as const;
      for (const log of logs) log.start();
      const port = await freePort();
      const target = {
        brokers: stack.kafkaBrokers,
        registryUrl: stack.schemaRegistryUrl,
        providerUrl: primary.url,
        commands,
        results,
        deadLetter: `${results}.dlq`,
        group: `failover-${id}`,
      };
      const worker = startWorker(
        workerEnv(target, {
          HTTP_PORT: String(port),
          ACCOUNTS: 'backup',
          ACCOUNT_BACKUP_BASE_URL: backup.url,
          ACCOUNT_BACKUP_ACCESS_KEY_ID: 'bench-backup-key',
        }),
      );
      try {
        await waitReady(port, worker, 120_000);
        const { publishedAt, kinds } = await publishAtRate({
          kafka,
          registry,
          topic: commands,
          rate,
          seconds,
          idPrefix: `f${id}`,
          seed: 20 + run,
          refusedShare: share,
        });
        await sleep(3_000);
        for (const log of logs) await log.poll();
        const figures = timesToSend(publishedAt, kinds, logs[0].all(), logs[1].all());
        all.push(figures);
        console.log(`  run ${run}: ${line(figures, latencyMs)}`);
      } finally {
        await stopChild(worker);
        for (const log of logs) await log.stop();
        await deleteTopics(kafka, [commands, results, `${results}.dlq`, `${commands}.ledger`]).catch(() => undefined);
      }
    }
    const extras = all.map((f) => percentile(sortedNumbers([...f.failedOver]), 50) - percentile(sortedNumbers([...f.direct]), 50));
    const sorted = sortedNumbers(extras);
    const verdict = median(sorted) <= latencyMs * 1.5;
    console.log(
      `median over ${runs} runs: a failover adds ${ms(median(sorted))} (${ms(sorted[0] ?? 0)}–${ms(sorted.at(-1) ?? 0)}) to the p50 time to send; one refused round trip is ${ms(latencyMs)} → ${verdict ? 'within' : 'NOT within'} one round trip (+50% for the worker's own work)`,
    );
    return all.some((f) => f.odd > 0) ? 1 : 0;
  } finally {
    await primary.stop();
    await backup.stop();
    await stack.stop();
  }
}

function timesToSend(
  publishedAt: ReadonlyMap<string, number>,
  kinds: ReadonlyMap<string, string>,
  onPrimary: readonly LoggedRequest[],
  onBackup: readonly LoggedRequest[],
): RunFigures {
  const accepted = new Map<string, { at: number; backup: boolean }>();
  for (const r of onPrimary) if (r.accepted && r.correlationId !== undefined) accepted.set(r.correlationId, { at: r.receivedAt, backup: false });
  for (const r of onBackup) if (r.accepted && r.correlationId !== undefined) accepted.set(r.correlationId, { at: r.receivedAt, backup: true });
  const direct: number[] = [];
  const failedOver: number[] = [];
  let odd = 0;
  for (const [id, at] of publishedAt) {
    const sent = accepted.get(id);
    if (sent === undefined) continue;
    if (kinds.get(id) === 'refused-route') {
      if (!sent.backup) odd += 1;
      failedOver.push(sent.at - at);
    } else direct.push(sent.at - at);
  }
  return { direct, failedOver, odd };
}

function line(f: RunFigures, latencyMs: number): string {
  const d = sortedNumbers([...f.direct]);
  const o = sortedNumbers([...f.failedOver]);
  return `direct ${fmt(d.length)}: p50 ${ms(percentile(d, 50))}, p99 ${ms(percentile(d, 99))}; failed over ${fmt(o.length)}: p50 ${ms(percentile(o, 50))}, p99 ${ms(percentile(o, 99))}; p50 difference ${ms(percentile(o, 50) - percentile(d, 50))} (one round trip ${ms(latencyMs)})${f.odd > 0 ? `; ${f.odd} AU texts not sent through backup` : ''}`;
}

exitWith('failover', main);
