import { cpSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import type { CommandResult } from '../../src/contracts/result.ts';
import { ResultReader } from '../../src/kafka/result-reader.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually } from '../helpers/kafka.ts';
import { usePrivateKafka } from '../helpers/private-kafka.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { publisherFor, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();
const cleanups = useCleanups();
const broker = usePrivateKafka();

interface LogLine {
  readonly level?: number;
  readonly msg: string;
  readonly memberId?: string;
  readonly err?: { readonly message?: string };
  readonly error?: string;
}

const PARTITIONS = 6;
/** Commands published every 100 ms (BROKER_CRASH_PER_TICK: 15 is the 150/s the issue measured at; the test's default is lighter). */
const PER_TICK = Number(process.env['BROKER_CRASH_PER_TICK'] ?? 5);

/**
 * Two workers (the default 30 s session) on the private broker under about 50 commands a second (PER_TICK)
 * (published through the outage; a publish the broker did not acknowledge is not counted), the
 * broker taken away (`outage`) and started again on its data; 10 s more of load, then every
 * acknowledged command's result. What each worker logged from the outage on is returned, and
 * written to BROKER_CRASH_DUMP.<label> when set (to read when a case fails).
 */
async function underLoadThrough(label: string, outage: () => Promise<void>) {
  sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'lognormal', medianMs: 50, p99Ms: 500 } });
  cleanups.add(() => sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'none' } }));
  const topics = testTopics();
  const kafka = broker.client();
  await createTopics(kafka, [
    { topic: topics.commands, partitions: PARTITIONS },
    { topic: topics.results },
    { topic: topics.deadLetter },
    { topic: topics.ledger, partitions: PARTITIONS },
  ]);
  const env = workerEnv(topics, sandbox.url, { KAFKA_BROKERS: broker.bootstrap, KAFKA_SESSION_TIMEOUT_MS: '30000' });
  // Each worker a process of its own, as deployed (kafkajs's patches tell a process's consumer
  // events by group id: two workers of one group in one process would hear each other's).
  const processes = [new WorkerProcess(env), new WorkerProcess(env)];
  for (const worker of processes)
    cleanups.add(async () => {
      worker.signal('SIGTERM');
      await worker.stopped(60_000).catch(() => worker.signal('SIGKILL'));
    });
  const exits: { code: number | null; signal: NodeJS.Signals | null }[] = [];
  for (const worker of processes) void worker.exited.then((exit) => exits.push(exit));
  const workers = processes.map((worker) => ({
    get logs(): LogLine[] {
      return worker.output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .flatMap((line) => {
          try {
            return [JSON.parse(line) as LogLine];
          } catch {
            return [];
          }
        });
    },
  }));
  await eventually(
    () => (workers.every(({ logs }) => logs.some((l) => l.msg === 'joined consumer group')) ? true : undefined),
    90_000,
    'both workers in the group',
  );

  // Each result record once, by its place: the reader's own consumer may read a stretch again after the outage.
  const results = new Map<string, CommandResult[]>();
  const seen = new Set<string>();
  const reader = new ResultReader(broker.client(), createRegistry(inject('schemaRegistryUrl')), topics.results);
  const onResult = ({ result, partition, offset }: { result: CommandResult; partition: number; offset: string }): void => {
    if (seen.has(`${partition}@${offset}`)) return;
    seen.add(`${partition}@${offset}`);
    results.set(result.commandId, [...(results.get(result.commandId) ?? []), result]);
  };
  await within(45_000, 'starting the result reader', reader.start(onResult, { fromBeginning: true }));
  cleanups.add(() => reader.stop());

  const publisher = await publisherFor(kafka, topics.commands);
  cleanups.add(() => publisher.disconnect());
  const acknowledged: string[] = [];
  let publishing = true;
  const load = (async () => {
    while (publishing) {
      const batch = Array.from({ length: PER_TICK }, () => textCommand());
      const sent = await publisher.publish(batch.map((command) => ({ command }))).then(
        () => true,
        () => false,
      );
      if (sent) acknowledged.push(...batch.map((c) => c.commandId));
      await new Promise((r) => setTimeout(r, 100));
    }
  })();

  await eventually(() => (results.size >= 100 ? true : undefined), 90_000, '100 results before the outage');
  const membersBefore = workers.map(({ logs }) => logs.filter((l) => l.msg === 'joined consumer group').at(-1)?.memberId);
  const linesBefore = workers.map(({ logs }) => logs.length);
  await outage();
  const backAt = Date.now();
  await eventually(() => (sandbox.state.requestSummaries().some((r) => r.receivedAt >= backAt) ? true : undefined), 120_000, 'a send after the broker is back');
  await new Promise((r) => setTimeout(r, 10_000));
  publishing = false;
  await load;
  const dump = process.env['BROKER_CRASH_DUMP'];
  const after = (): LogLine[][] => workers.map(({ logs }, i) => logs.slice(linesBefore[i]));
  try {
    await eventually(
      () => (acknowledged.every((id) => results.has(id)) ? true : undefined),
      120_000,
      () => `a result for each of ${acknowledged.length} commands (${acknowledged.filter((id) => !results.has(id)).length} missing)`,
    );
  } finally {
    if (dump !== undefined) {
      const missing = acknowledged.filter((id) => !results.has(id));
      writeFileSync(
        `${dump}.${label}`,
        [JSON.stringify({ backAt, missing }), ...after().map((lines) => lines.map((l) => JSON.stringify(l)).join('\n'))].join('\n----\n'),
      );
      // The broker's own log and its ledger, result and command partitions (for kafka-dump-log), deleted with the broker otherwise.
      cpSync(join(broker.workDir, 'kafka.log'), `${dump}.${label}.kafka.log`);
      const data = join(broker.workDir, 'kafka-data');
      for (const dir of readdirSync(data).filter((d) =>
        [topics.ledger, topics.results, topics.commands, '__transaction_state'].some((t) => d.startsWith(`${t}-`)),
      ))
        cpSync(join(data, dir), `${dump}.${label}.data/${dir}`, { recursive: true });
    }
  }

  // The first request at the service after the broker answered, overall and per partition (from the results: where each command was).
  const partitionOf = new Map([...results].map(([id, list]) => [id, list[0]?.source.partition]));
  const requestsAfter = sandbox.state.requestSummaries().filter((r) => r.receivedAt >= backAt);
  const firstSend = Math.min(...requestsAfter.map((r) => r.receivedAt)) - backAt;
  const firstSendByPartition = Array.from({ length: PARTITIONS }, (_, p) => {
    const times = requestsAfter.filter((r) => r.correlationId !== undefined && partitionOf.get(r.correlationId) === p).map((r) => r.receivedAt);
    return times.length === 0 ? undefined : Math.min(...times) - backAt;
  });
  // When the sends reached the published rate again: the first whole second after the broker
  // answered with at least 90% of it in requests at the service, the backlog's included, while the
  // load goes on (10 s after the first send) or after (a diagnostic; timing targets are the bench's).
  const perSecond = new Map<number, number>();
  for (const r of requestsAfter) {
    const second = Math.floor((r.receivedAt - backAt) / 1000);
    perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
  }
  const atRate = [...perSecond.keys()].sort((a, b) => a - b).find((second) => (perSecond.get(second) ?? 0) >= 0.9 * PER_TICK * 10);
  return { exits, results, acknowledged, after: after(), membersBefore, firstSend, firstSendByPartition, atRate };
}

type Run = Awaited<ReturnType<typeof underLoadThrough>>;

/** Every acknowledged command answered once, none UNKNOWN, none requested twice; no worker died; no consumer crashed, none joined as a new member. */
function expectRiddenOut(run: Run): void {
  expect(run.exits).toEqual([]);
  for (const [i, lines] of run.after.entries()) {
    expect(lines.filter((l) => l.msg === 'consumer crashed').map((l) => l.err?.message ?? l.error)).toEqual([]);
    expect(
      lines
        .filter((l) => l.msg === 'joined consumer group')
        .map((l) => l.memberId)
        .filter((id) => id !== run.membersBefore[i]),
    ).toEqual([]);
  }
  expect(
    [...run.results.values()]
      .filter((list) => list.length > 1)
      .map((list) =>
        list.map(
          (r) =>
            `${r.commandId} ${r.outcome} from ${r.source.partition}@${r.source.offset} completed ${new Date(r.completedAt).toISOString()} attempts ${r.attempts}`,
        ),
      ),
  ).toEqual([]);
  const unknown = [...run.results.values()].flat().filter((r) => r.outcome === 'UNKNOWN');
  expect(unknown.map((r) => `${r.commandId} ${r.error?.message ?? ''}`)).toEqual([]);
  for (const id of run.acknowledged) expect(sandbox.state.requestSummaries({ correlationId: id }).length, id).toBeLessThanOrEqual(1);
}

describe('the one broker going away under load, and back', () => {
  // Before, both consumers crashed about 30 s into the outage (their fetch loops gave up on the
  // refused connections), rejoined as new members and waited out the old members' session: the
  // first send came 30.5 s after the broker answered again. Now the members keep their ids.
  it('killed (SIGKILL) for 20 s: two workers keep their group membership, every command answered once, none UNKNOWN', async () => {
    const run = await underLoadThrough('kill', async () => {
      await broker.kill();
      await new Promise((r) => setTimeout(r, 20_000));
      await broker.start();
    });
    console.log(
      `[broker-crash] SIGKILL 20 s: first send ${run.firstSend} ms after the broker answered again; by partition ${JSON.stringify(run.firstSendByPartition)}; at the published rate from second ${run.atRate ?? 'never'}; ${run.acknowledged.length} commands`,
    );
    expectRiddenOut(run);
    // A partition that waited said on what (stall-report.ts): its claim's state, its transaction, its records by state.
    const waits = run.after.flat().filter((l) => l.msg === 'a partition has made no progress for a second or more') as unknown as Record<string, unknown>[];
    expect(waits.length).toBeGreaterThan(0);
    for (const line of waits) expect(line).toMatchObject({ partition: expect.any(String), waitedMs: expect.any(Number) });
    expect(waits.some((line) => typeof line['claim'] === 'string' && typeof line['transaction'] === 'boolean' && typeof line['records'] === 'object')).toBe(
      true,
    );
  }, 600_000);

  it('stopped gracefully (SIGTERM) for 8 s: the same, and every partition sends again', async () => {
    const run = await underLoadThrough('stop', async () => {
      await broker.stop();
      await new Promise((r) => setTimeout(r, 8_000));
      await broker.start();
    });
    console.log(
      `[broker-crash] SIGTERM 8 s: first send ${run.firstSend} ms after the broker answered again; by partition ${JSON.stringify(run.firstSendByPartition)}; at the published rate from second ${run.atRate ?? 'never'}; ${run.acknowledged.length} commands`,
    );
    expectRiddenOut(run);
    expect(run.firstSendByPartition.filter((ms) => ms === undefined)).toEqual([]);
  }, 600_000);
});
