import { describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import {
  createWorkerTopics,
  metricTotal,
  publisherFor,
  ResultCollector,
  startTestWorker,
  testTopics,
  textCommand,
  within,
  workerEnv,
} from '../helpers/worker.ts';

/** Every call the first worker makes takes this long: its calls are still under way when its partition moves. */
const SLOW_MS = 8_000;
const slow = useSandbox({ faults: { latency: { kind: 'fixed', ms: SLOW_MS } } });
const fast = useSandbox();
const cleanups = useCleanups();

describe('handing a partition over to another process', () => {
  it('the new owner sends at once, while the earlier owner’s calls on the partition are under way, and those get their real results, not UNKNOWN', async () => {
    const topics = testTopics();
    await createWorkerTopics(topics, 2);
    // A response timeout past the slow calls; in-flight slots for every command of the first wave.
    const env = { TOPICS_PARTITIONS: '2', PROVIDER_RESPONSE_TIMEOUT_MS: '15000', MAX_IN_FLIGHT: '16' };
    const { worker: first } = await startTestWorker(workerEnv(topics, slow.url, env));
    cleanups.add(() => first.stop());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());

    // The first wave: calls under way at the first worker on both partitions.
    const wave1 = Array.from({ length: 8 }, (_, i) => textCommand({ commandId: `under-way-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(wave1.map((command, i) => ({ command, key: `first-${i}` }))));
    const ids1 = wave1.map((c) => c.commandId);
    // (The sandbox logs a request once it has answered it: the worker's own gauge says the calls are under way.)
    await eventually(async () => ((await metricTotal(first, 'inFlight')) === wave1.length ? true : undefined), 30_000, 'every first-wave call to be under way');

    // A second worker joins (its calls are fast) and takes one partition; a second wave follows at once.
    const { worker: second } = await startTestWorker(workerEnv(topics, fast.url, env));
    cleanups.add(() => second.stop());
    const wave2 = Array.from({ length: 8 }, (_, i) => textCommand({ commandId: `after-move-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(wave2.map((command, i) => ({ command, key: `second-${i}` }))));
    const ids2 = wave2.map((c) => c.commandId);
    await results.waitFor([...ids1, ...ids2], 60_000);

    // Every command: one result, sent once; the first wave by the first worker, all SENT (none UNKNOWN).
    for (const id of [...ids1, ...ids2]) {
      expect(results.byCommand.get(id)?.length, id).toBe(1);
      expect(slow.state.acceptedSends(id) + fast.state.acceptedSends(id), id).toBe(1);
    }
    expect(ids1.map((id) => results.byCommand.get(id)?.[0]?.outcome)).toEqual(ids1.map(() => 'SENT'));
    expect(ids1.filter((id) => fast.state.acceptedSends(id) > 0)).toEqual([]);

    // The partition that moved: the one whose second-wave commands the second worker sent.
    const partitionOf = (id: string): number | undefined => results.byCommand.get(id)?.[0]?.source.partition;
    const byFast = ids2.filter((id) => fast.state.acceptedSends(id) > 0);
    const moved = new Set(byFast.map(partitionOf));
    expect(moved.size).toBe(1);
    const movedUnderWay = ids1.filter((id) => moved.has(partitionOf(id)));
    expect(movedUnderWay.length, 'first-wave calls under way on the partition that moved').toBeGreaterThan(0);
    // The second worker's first call came before the first worker's calls on that partition were
    // answered: it fenced at once, without waiting for them (their results came by handover).
    const firstFastCall = Math.min(...byFast.flatMap((id) => fast.state.requests({ correlationId: id }).map((r) => r.receivedAt)));
    const earliestAnswer = Math.min(...movedUnderWay.flatMap((id) => slow.state.requests({ correlationId: id }).map((r) => r.receivedAt + SLOW_MS)));
    expect(firstFastCall).toBeLessThan(earliestAnswer);
  }, 120_000);
});
