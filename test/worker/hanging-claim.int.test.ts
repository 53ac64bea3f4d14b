// Two workers, and a transaction hanging in a command partition's ledger partition (one its
// coordinator does not know, as a broker crash can leave): the claim's read after the fence waits
// DECIDED_WAIT_MS (10 s) for it before it settles the partition, longer than the 6 s session. The
// claiming member must keep heartbeating meanwhile. Without that, `node bench/chaos.ts --seed 4242
// --accounts 2` wedged: each member's claim outlived its session, the group gave the partition to
// the other, whose fence failed the first claim's settle, and so on for as long as it hung.
import { describe, expect, it } from 'vitest';
import { PartitionReader } from '../../src/kafka/partition-reader.ts';
import { leaveHangingTransaction } from '../../tools/hanging-transaction.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { testBrokers, testKafka } from '../helpers/kafka.ts';
import { createWorkerTopics, publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

describe('a claim that waits out a hanging transaction', () => {
  it('keeps its member in the group (6 s session, 10 s wait): every command is answered once, and sent once', { timeout: 120_000 }, async () => {
    const topics = testTopics();
    await createWorkerTopics(topics, 1);
    const env = workerEnv(topics, sandbox.url, { TOPICS_PARTITIONS: '1', KAFKA_SESSION_TIMEOUT_MS: '6000' });
    const { worker: first } = await startTestWorker(env);
    cleanups.add(() => first.stop());
    const { worker: second } = await startTestWorker(env);
    cleanups.add(() => second.stop());
    // Before the first command: the claim happens at the partition's first batch.
    const admin = testKafka().admin();
    await admin.connect();
    cleanups.add(() => admin.disconnect());
    const reader = new PartitionReader(testKafka());
    cleanups.add(() => reader.close());
    await leaveHangingTransaction({
      brokers: testBrokers(),
      admin,
      reader,
      transactionalId: `${topics.transactionalIdPrefix}-${topics.commands}-0`,
      topic: topics.ledger,
      partition: 0,
    });
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    const commands = Array.from({ length: 5 }, () => textCommand());
    await within(30_000, 'publishing', publisher.publish(commands.map((command) => ({ command }))));
    // One wait of 10 s and a claim: well within a minute. The wedge never answered them.
    const got = await results.waitFor(
      commands.map((c) => c.commandId),
      60_000,
    );
    for (const c of commands) {
      expect(got.get(c.commandId)?.outcome, c.commandId).toBe('SENT');
      expect(results.byCommand.get(c.commandId), c.commandId).toHaveLength(1);
      expect(sandbox.state.acceptedSends(c.commandId), c.commandId).toBe(1);
    }
  });
});
