import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { createTopics, eventually, testKafka } from '../helpers/kafka.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { publisherFor, ResultCollector, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox({ faults: { latency: { kind: 'fixed', ms: 15 } } });
const cleanups = useCleanups();

interface Outcome {
  counts: number[];
  /** The workers' warnings and errors, to explain a failure. */
  trouble: string;
  sentTwice: string[];
  /** Commands whose committed result the reader had already seen when the first worker stopped. */
  committedAtStop: Set<string>;
  firstExit: { code: number | null; signal: NodeJS.Signals | null };
}

async function scenario(stopWith: NodeJS.Signals): Promise<Outcome> {
  const topics = testTopics();
  const env = workerEnv(topics, sandbox.url, { MAX_IN_FLIGHT: '8', SHUTDOWN_TIMEOUT_MS: '20000' });
  await createTopics(testKafka(), [{ topic: topics.commands, partitions: 3 }, { topic: topics.results }, { topic: topics.deadLetter }]);
  const publisher = await publisherFor(testKafka(), topics.commands);
  cleanups.add(() => publisher.disconnect());
  const commands = Array.from({ length: 300 }, () => ({ command: textCommand({ commandId: `proc-${randomUUID()}` }) }));
  await publisher.publish(commands);
  const results = await ResultCollector.start(topics.results);
  cleanups.add(() => results.stop());

  const first = new WorkerProcess(env);
  cleanups.add(async () => first.signal('SIGKILL'));
  await eventually(() => (results.byCommand.size >= 30 ? true : undefined), 60_000, 'results before the stop');
  const killAt = Date.now();
  first.signal(stopWith);
  const firstExit = await first.stopped(30_000);
  const committedAtStop = new Set(results.byCommand.keys());
  expect(committedAtStop.size).toBeLessThan(commands.length);

  const second = new WorkerProcess(env);
  cleanups.add(async () => {
    second.signal('SIGTERM');
    await second.stopped(30_000);
  });
  await results.waitFor(
    commands.map((c) => c.command.commandId),
    120_000,
  );
  // Give a duplicate, if there were one, time to show up before counting.
  await new Promise((r) => setTimeout(r, 1_500));
  const counts = commands.map((c) => results.byCommand.get(c.command.commandId)?.length ?? 0);
  const sentTwice = commands.map((c) => c.command.commandId).filter((id) => sandbox.state.acceptedSends(id) > 1);
  const dups = commands.map((c) => results.byCommand.get(c.command.commandId) ?? []).filter((l) => l.length > 1);
  const dupInfo = dups
    .slice(0, 5)
    .map((l) => l.map((r) => `${r.source.partition}:${r.source.offset}@${r.completedAt}`).join(' | '))
    .join('\n');
  const trouble =
    `killAt=${killAt} dups:\n${dupInfo}\n` +
    [first.output, second.output]
      .join('\n')
      .split('\n')
      .filter((line) => /"level":(40|50|60)/.test(line) && !line.includes('partitioner'))
      .slice(0, 40)
      .join('\n');
  return { counts, trouble, sentTwice, committedAtStop, firstExit };
}

describe('worker process: stopped mid-stream and started again', () => {
  it('SIGTERM: exits 0 after committing what it dispatched; every command has exactly one result, none sent twice', async () => {
    const { counts, trouble, sentTwice, firstExit } = await scenario('SIGTERM');
    expect(firstExit).toEqual({ code: 0, signal: null });
    expect(
      counts.filter((n) => n !== 1),
      trouble,
    ).toEqual([]);
    expect(sentTwice).toEqual([]);
  });

  it('SIGKILL: every command still has exactly one committed result, and none is sent twice', async () => {
    const { counts, trouble, sentTwice, committedAtStop, firstExit } = await scenario('SIGKILL');
    expect(firstExit.signal).toBe('SIGKILL');
    expect(
      counts.filter((n) => n !== 1),
      trouble,
    ).toEqual([]);
    // Sends in flight at the kill end UNKNOWN (the intent ledger), they are not sent again.
    expect(committedAtStop.size).toBeGreaterThan(0);
    expect(sentTwice).toEqual([]);
  });
});
