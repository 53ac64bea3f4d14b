/**
 * Ceiling: a raw kafkajs pipe. eachBatch over all partitions at once; every record is decoded,
 * mapped, validated and a result of realistic size encoded — but no HTTP call is made; one
 * (non-transactional, acks=all) send per batch, offsets auto-committed. At-least-once, not
 * exactly-once: the upper bound of what the Kafka + Avro part of the worker could do.
 */
import { sentResult } from '../../src/contracts/result.ts';
import { encodeResult, decodeAndValidate, resultWithoutSend, setUp, summaryOnSignal, syntheticSuccess } from './common.ts';

const { settings, kafka, codec } = await setUp('ceiling');
const producer = kafka.producer({ allowAutoTopicCreation: false });
const consumer = kafka.consumer({ groupId: settings.group, maxWaitTimeInMs: 100, readUncommitted: false });
let produced = 0;
summaryOnSignal('ceiling', () => produced, async () => {
  await consumer.disconnect();
  await producer.disconnect();
});
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: settings.input, fromBeginning: true });
await consumer.run({
  partitionsConsumedConcurrently: 12,
  eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
    const messages: { key: string; value: Buffer }[] = [];
    for (const message of batch.messages) {
      const source = { topic: batch.topic, partition: batch.partition, offset: message.offset };
      const decoded = await decodeAndValidate(codec, message.value);
      if (decoded === undefined) continue;
      const { command, validation } = decoded;
      const result = resultWithoutSend(command, validation, source) ?? (validation.kind === 'send' ? sentResult({ command, source, completedAt: Date.now() }, syntheticSuccess(validation.request)) : undefined);
      if (result !== undefined) messages.push(await encodeResult(codec, result));
    }
    if (messages.length > 0) await producer.send({ topic: settings.output, messages });
    produced += messages.length;
    const last = batch.messages[batch.messages.length - 1];
    if (last !== undefined) resolveOffset(last.offset);
    await heartbeat();
  },
});
