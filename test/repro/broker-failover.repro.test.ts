import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it, onTestFailed } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, uniqueName, withAdmin } from '../helpers/kafka.ts';
import { startPrivateCluster } from '../helpers/private-kafka.ts';
import { publisherFor, startLoggedWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const { Partitioners } = kafkajs;
const sandbox = useSandbox();
const cleanups = useCleanups();
let cluster: Awaited<ReturnType<typeof startPrivateCluster>>;
// SMS_WORKER_REPRO_BROKERS (default 2): the cluster's size; from 3 on, every topic and the
// transaction log have min.insync.replicas 2, as production clusters do.
const brokers = Number(process.env['SMS_WORKER_REPRO_BROKERS'] ?? '2');
// SMS_WORKER_REPRO_KEEP=<dir>: a failed run keeps the brokers' directories (data, logs) and the
// worker's log there, for Kafka's DumpLogSegments (which producer id and epoch wrote each record,
// and which marker ended it).
const keepDir = process.env['SMS_WORKER_REPRO_KEEP'];
// SMS_WORKER_REPRO_STOP_MS and SMS_WORKER_REPRO_KILL_MS (default 3000 each): how long the broker
// stays down after its controlled shutdown and after its kill.
const stopMs = Number(process.env['SMS_WORKER_REPRO_STOP_MS'] ?? '3000');
const killMs = Number(process.env['SMS_WORKER_REPRO_KILL_MS'] ?? '3000');
let failed: { readonly logs: readonly unknown[] } | undefined;

beforeAll(async () => {
  cluster = await startPrivateCluster(brokers, undefined, brokers >= 3 ? 2 : 1);
}, 240_000);
afterAll(async () => {
  if (failed !== undefined && keepDir !== undefined && cluster !== undefined) {
    const dir = join(keepDir, new Date().toISOString().replace(/[:.]/g, '-'));
    mkdirSync(dir, { recursive: true });
    for (const [i, node] of cluster.nodes.entries()) {
      await node.stop();
      cpSync(node.workDir, join(dir, `node-${i + 1}`), { recursive: true });
    }
    writeFileSync(join(dir, 'worker.log'), failed.logs.map((line) => JSON.stringify(line)).join('\n') + '\n');
    console.error(`kept the failed run's brokers and worker log in ${dir}`);
  }
  await cluster?.dispose();
});

interface LogLine {
  readonly level?: number;
  readonly msg: string;
  readonly component?: string;
  readonly partition?: number;
  readonly err?: { readonly message?: string };
}

// A SOAK CHECK, not part of `npm test` (vitest.config.ts runs it only with SMS_WORKER_REPRO=1:
// `SMS_WORKER_REPRO=1 npx vitest run --project repro`): about a minute and a cluster of its own for
// a check that is probabilistic. It found two kafkajs faults (a result written twice or missing in
// 12 of 77 runs on 2 cores, each command sent once), both fixed and tested deterministically in
// test/kafka/cluster-moves.int.test.ts; docs/guarantees.md, "A broker of a multi-broker cluster
// restarting". On failure it prints what the next person needs: the commands, their partition,
// whether the service got them, and the worker's log for that partition (debug level).
//
// A Kafka upgrade or a node drain restarts the brokers one at a time while the cluster serves on:
// the partitions a broker leads move to the others (a controlled shutdown first hands them over;
// a killed broker's move once the controller notices), and so do the group and transaction
// coordinators it hosted. The single-broker tests (broker-restart.int.test.ts) take the whole
// cluster away; this one keeps it up and moves everything the restarting broker had under a
// worker at work: commands flow all through, and each must end in exactly one result, sent once.
describe('a broker of a two-broker cluster restarting under load', () => {
  it('the worker works on through a controlled restart and a kill of a broker: every command answered once and sent once', async () => {
    const topics = testTopics();
    const kafka = createKafka(plaintextKafkaSettings(cluster.bootstrap, uniqueName('cluster')), createLogger('silent'), undefined, { retry: { retries: 5 } });
    await createTopics(kafka, [
      { topic: topics.commands, partitions: 6 },
      { topic: topics.results },
      { topic: topics.deadLetter },
      { topic: topics.ledger, partitions: 6 },
    ]);
    const { worker, logs } = await startLoggedWorker<LogLine>(
      workerEnv(topics, sandbox.url, { KAFKA_BROKERS: cluster.bootstrap, KAFKA_SESSION_TIMEOUT_MS: '10000' }),
      cleanups,
      'debug',
      60_000,
    );
    onTestFailed(() => void (failed = { logs }));
    let died: unknown;
    worker.done.catch((error: unknown) => (died = error));

    const registry = createRegistry(inject('schemaRegistryUrl'));
    const publisher = await publisherFor(kafka, topics.commands);
    cleanups.add(() => publisher.disconnect());
    // Published and acknowledged: a publish that failed (its broker going away under it) may or may
    // not have been written, so only acknowledged commands are counted, and it is not retried.
    const published: string[] = [];
    let publishing = true;
    const stream = (async () => {
      while (publishing) {
        const command = textCommand();
        try {
          await publisher.publish([{ command }]);
          published.push(command.commandId);
        } catch {
          // The restarting broker led the partition: the next command goes on.
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const [, second] = cluster.nodes;
    if (second === undefined) throw new Error('the cluster has two nodes');
    const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    const events: { readonly what: string; readonly at: number }[] = [];
    try {
      await sleep(3_000);
      // A controlled shutdown (SIGTERM: the broker hands its leaderships over first), down 3 s.
      events.push({ what: `stopped for ${stopMs} ms`, at: Date.now() });
      await second.stop();
      await sleep(stopMs);
      await second.start();
      await sleep(5_000);
      // A kill: its partitions and coordinators move only once the controller notices.
      events.push({ what: `killed for ${killMs} ms`, at: Date.now() });
      await second.kill();
      await sleep(killMs);
      await second.start();
      await sleep(5_000);
      events.push({ what: 'end', at: Date.now() });
    } finally {
      publishing = false;
      await stream;
    }

    // A command's partition, as the publisher's default partitioner chose it.
    const partitionOf = (id: string): number =>
      Partitioners.DefaultPartitioner()({
        topic: topics.commands,
        partitionMetadata: Array.from({ length: 6 }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [1, 2], isr: [1, 2], partitionErrorCode: 0 })),
        message: { key: id, value: null },
      });
    const results = new Map<string, string[]>();
    const reader = new ResultReader(
      createKafka(plaintextKafkaSettings(cluster.bootstrap, uniqueName('reader')), createLogger('silent')),
      registry,
      topics.results,
    );
    await within(
      60_000,
      'starting the result reader',
      reader.start(({ result }) => void results.set(result.commandId, [...(results.get(result.commandId) ?? []), result.outcome]), { fromBeginning: true }),
    );
    cleanups.add(() => reader.stop());
    try {
      await eventually(
        () => (published.every((id) => results.has(id)) || died !== undefined ? true : undefined),
        180_000,
        () => {
          const missing = published.filter((id) => !results.has(id));
          return `every published command's result (${missing.length} of ${published.length} missing)`;
        },
      );
    } catch (error) {
      const missing = published.filter((id) => !results.has(id));
      const where = missing.map((id) => ({
        id,
        partition: partitionOf(id),
        sends: sandbox.state.acceptedSends(id),
      }));
      const partitions = new Set(where.map((w) => w.partition));
      const offsets = await withAdmin(kafka, async (admin) => ({
        committed: await admin.fetchOffsets({ groupId: topics.group, topics: [topics.commands] }),
        ends: await admin.fetchTopicOffsets(topics.commands),
      })).catch((e: unknown) => String(e));
      const lines = logs
        .filter(
          (line) =>
            missing.some((id) => JSON.stringify(line).includes(id)) ||
            (line.component !== 'kafkajs' && partitions.has(line.partition ?? -1)) ||
            ((line.level ?? 0) >= 40 && line.component !== 'kafkajs'),
        )
        .map((line) => JSON.stringify(line).slice(0, 600));
      // The results topic read_uncommitted: a result there but not read_committed was aborted (or is still open).
      const uncommitted: string[] = [];
      const raw = kafka.consumer({ groupId: uniqueName('raw'), readUncommitted: true });
      await raw.connect();
      await raw.subscribe({ topic: topics.results, fromBeginning: true });
      await raw.run({
        eachMessage: async ({ partition, message }) =>
          void (
            missing.some((id) => message.key?.toString().includes(id) || message.value?.includes(id)) &&
            uncommitted.push(`${partition}@${message.offset} key ${message.key?.toString()}`)
          ),
      });
      await new Promise((r) => setTimeout(r, 8_000));
      await raw.disconnect();
      throw new Error(
        `${String(error)}\nmissing: ${JSON.stringify(where)}\noffsets: ${JSON.stringify(offsets)}\nread_uncommitted: ${JSON.stringify(uncommitted)}\nworker log (warn and above, and the missing commands' partitions):\n${lines.join('\n')}`,
        { cause: error },
      );
    }

    // What the restarts cost, for the notes: from each event to the next, the longest time each
    // partition went without a request at the service (commands published every 50 ms, spread over 6 partitions).
    const sends = sandbox.state.requestSummaries().filter((r) => r.correlationId !== undefined);
    for (const [i, event] of events.entries()) {
      const until = events[i + 1]?.at;
      if (until === undefined) break;
      const silences = Array.from({ length: 6 }, (_, p) => {
        const times = [
          event.at,
          ...sends.filter((r) => partitionOf(r.correlationId ?? '') === p && r.receivedAt >= event.at && r.receivedAt < until).map((r) => r.receivedAt),
          until,
        ];
        return Math.max(...times.slice(1).map((t, j) => t - (times[j] ?? t)));
      });
      console.log(`[broker-failover] ${brokers} brokers, ${event.what}: the longest silence by partition ${JSON.stringify(silences)} ms`);
    }

    // What the restarts cost, for the notes: the worker's own warnings and errors, by message.
    const warned = new Map<string, number>();
    for (const line of logs) if ((line.level ?? 0) >= 40 && line.component !== 'kafkajs') warned.set(line.msg, (warned.get(line.msg) ?? 0) + 1);
    console.log(`worker warnings and errors by message: ${JSON.stringify(Object.fromEntries(warned))}`);
    expect(died).toBeUndefined();
    expect(published.length).toBeGreaterThan(100);
    const notOnce = published.filter((id) => results.get(id)?.length !== 1);
    const about = (id: string): string => {
      const partition = partitionOf(id);
      const lines = logs
        .filter((line) => line.component !== 'kafkajs' && (line.partition === partition || !('partition' in line) || JSON.stringify(line).includes(id)))
        .map((line) => {
          const { err, ...rest } = line as unknown as Record<string, unknown>;
          return JSON.stringify({ ...rest, ...(err !== undefined && { err: (err as { message?: string }).message }) })
            .replace(/"(pid|hostname|service)":[^,]*,/g, '')
            .slice(0, 420);
        });
      return `${id}: results ${JSON.stringify(results.get(id))}, sends ${sandbox.state.acceptedSends(id)}, partition ${partition}\n${lines.join('\n')}`;
    };
    expect(notOnce, notOnce.map(about).join('\n')).toEqual([]);
    const sentTwice = published.filter((id) => sandbox.state.acceptedSends(id) > 1);
    expect(sentTwice).toEqual([]);
    const outcomes = new Map<string, number>();
    for (const id of published) for (const outcome of results.get(id) ?? []) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    const crashes = logs.filter((line) => line.msg === 'consumer crashed').map((line) => line.err?.message);
    // Every command was a valid text to a reachable service: SENT, unless the move left one in doubt.
    expect(Object.fromEntries(outcomes), `consumer crashes: ${JSON.stringify(crashes)}`).toEqual({ SENT: published.length });
  }, 600_000);
});
