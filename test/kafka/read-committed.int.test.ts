import { describe, expect, it } from 'vitest';
import { createTopics, eventually, testKafka, uniqueName } from '../helpers/kafka.ts';

describe('read_committed through src/kafka/kafkajs.ts', () => {
  it('hides every aborted transaction when several producers are aborted in a different order than they began', async () => {
    const kafka = testKafka();
    const topic = uniqueName('rc');
    await createTopics(kafka, [{ topic }]);
    const producer = (name: string) => kafka.producer({ transactionalId: uniqueName(name), idempotent: true, maxInFlightRequests: 1 });
    const [a, b, c] = [producer('a'), producer('b'), producer('c')];
    await Promise.all([a.connect(), b.connect(), c.connect()]);

    const ta = await a.transaction();
    await ta.send({ topic, messages: [{ value: 'a1-aborted' }] });
    const tb = await b.transaction();
    await tb.send({ topic, messages: [{ value: 'b1-aborted' }] });
    const tc = await c.transaction();
    await tc.send({ topic, messages: [{ value: 'c1' }] });
    await tc.commit();
    await ta.send({ topic, messages: [{ value: 'a2-aborted' }] });
    // B began after A but is aborted first: the broker lists B's abort before A's.
    await tb.abort();
    await ta.abort();
    const tc2 = await c.transaction();
    await tc2.send({ topic, messages: [{ value: 'c2' }] });
    await tc2.commit();
    await Promise.all([a.disconnect(), b.disconnect(), c.disconnect()]);

    const consumer = kafka.consumer({ groupId: uniqueName('rc-reader'), readUncommitted: false });
    const seen: string[] = [];
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({ eachMessage: async ({ message }) => void seen.push(message.value?.toString() ?? '') });
      await eventually(() => (seen.includes('c2') ? true : undefined), 30_000, 'c2');
    } finally {
      await consumer.disconnect();
    }
    expect(seen).toEqual(['c1', 'c2']);
  });
});
