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

const sandbox = useSandbox();
const cleanups = useCleanups();

describe('keeping partitions across a rebalance (sticky assignment, kept claims)', () => {
  it('a second worker joining takes only half of the partitions; the first keeps the rest without fencing or reading them again, and every command is answered once', async () => {
    const topics = testTopics();
    await createWorkerTopics(topics, 4);
    const env = { TOPICS_PARTITIONS: '4' };
    const { worker: first } = await startTestWorker(workerEnv(topics, sandbox.url, env));
    cleanups.add(() => first.stop());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());

    const before = Array.from({ length: 40 }, (_, i) => textCommand({ commandId: `before-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(before.map((command, i) => ({ command, key: `key-${i}` }))));
    await results.waitFor(
      before.map((c) => c.commandId),
      60_000,
    );
    const claimedAlone = await metricTotal(first, 'recoveries');
    expect(claimedAlone).toBe(4);

    const { worker: second } = await startTestWorker(workerEnv(topics, sandbox.url, env));
    cleanups.add(() => second.stop());
    await eventually(async () => ((await metricTotal(second, 'recoveries')) === 2 ? true : undefined), 60_000, 'the second worker to claim its two partitions');
    // The first worker kept two partitions: claimed once, never again.
    expect(await metricTotal(first, 'claimsKept')).toBe(2);
    expect(await metricTotal(first, 'recoveries')).toBe(claimedAlone);

    const after = Array.from({ length: 40 }, (_, i) => textCommand({ commandId: `after-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(after.map((command, i) => ({ command, key: `key-${i}` }))));
    const ids = [...before, ...after].map((c) => c.commandId);
    await results.waitFor(ids, 60_000);
    for (const id of ids) expect(sandbox.state.requests({ correlationId: id }).length, id).toBe(1);
    expect(ids.map((id) => results.byCommand.get(id)?.length)).toEqual(ids.map(() => 1));
    expect(ids.map((id) => results.byCommand.get(id)?.[0]?.outcome)).toEqual(ids.map(() => 'SENT'));
  }, 120_000);
});
