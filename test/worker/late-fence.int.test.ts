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

describe('a late fence from a process that is no member any more', () => {
  it('the owner loses its partition, then claims it again once its heartbeats confirm its generation — without a rebalance — and sends what came after exactly once', async () => {
    const topics = testTopics();
    await createWorkerTopics(topics, 1);
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1' }));
    cleanups.add(() => worker.stop());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());

    const before = Array.from({ length: 5 }, (_, i) => textCommand({ commandId: `before-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(before.map((command) => ({ command }))));
    await results.waitFor(
      before.map((c) => c.commandId),
      60_000,
    );
    expect(await metricTotal(worker, 'recoveries')).toBe(1);

    // What a former member's fence landing late does: InitProducerId with the partition's
    // transactional id, from a process outside the group. The worker's producer is fenced; the
    // group (one member) has no reason to rebalance.
    const zombie = testKafka().producer({ transactionalId: `${topics.transactionalIdPrefix}-${topics.commands}-0`, idempotent: true, maxInFlightRequests: 1 });
    await zombie.connect();
    cleanups.add(() => zombie.disconnect());
    await (await zombie.transaction()).abort();

    expect(await metricTotal(worker, 'lostPartitions')).toBe(0);
    const after = Array.from({ length: 5 }, (_, i) => textCommand({ commandId: `after-${i}-${Date.now()}` }));
    await within(30_000, 'publishing', publisher.publish(after.map((command) => ({ command }))));
    // Lost (the gauge an operator alerts on) until the reclaim.
    await eventually(async () => ((await metricTotal(worker, 'lostPartitions')) === 1 ? true : undefined), 10_000, 'the partition counted as lost', {
      // Lost for about two heartbeats (100 ms apart): polled often enough not to miss it.
      interval: { initialMs: 5, maxMs: 5, jitter: 0 },
    });
    // Its first transaction after the fence fails (the partition is lost), two heartbeats later it is claimed afresh.
    await results.waitFor(
      after.map((c) => c.commandId),
      30_000,
    );
    await eventually(async () => ((await metricTotal(worker, 'recoveries')) === 2 ? true : undefined), 10_000, 'the partition claimed a second time');
    expect(await metricTotal(worker, 'lostPartitions')).toBe(0);
    const ids = [...before, ...after].map((c) => c.commandId);
    for (const id of ids) expect(sandbox.state.requests({ correlationId: id }).length, id).toBe(1);
    expect(ids.map((id) => results.byCommand.get(id)?.length)).toEqual(ids.map(() => 1));
    expect(ids.map((id) => results.byCommand.get(id)?.[0]?.outcome)).toEqual(ids.map(() => 'SENT'));
  }, 120_000);
});
