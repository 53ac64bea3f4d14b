/**
 * Ceiling: a raw kafkajs pipe. eachBatch over all partitions at once; every record is decoded,
 * mapped, validated and a result of realistic size encoded — but no HTTP call is made; one
 * (non-transactional, acks=all) send per batch, offsets auto-committed. At-least-once, not
 * exactly-once: the upper bound of what the Kafka + Avro part of the worker could do.
 */
import { sentResult } from '../../src/contracts/result.ts';
import { encodeResult, decodeAndValidate, exitOnCrash, resultWithoutSend, setUp, summaryOnSignal, syntheticSuccess } from './common.ts';

const { settings, kafka, codec } = await setUp('ceiling');
const producer = kafka.producer({ allowAutoTopicCreation: false });
const consumer = kafka.consumer({ groupId: settings.group, maxWaitTimeInMs: 100, readUncommitted: false });
const SEND_CHUNK = 1000;
let produced = 0;
exitOnCrash('ceiling', consumer);
summaryOnSignal(
  'ceiling',
  () => produced,
  async () => {
    await consumer.disconnect();
    await producer.disconnect();
  },
);
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
      const result =
        resultWithoutSend(command, validation, source) ??
        (validation.kind === 'send' ? sentResult({ command, source, completedAt: Date.now() }, syntheticSuccess(validation.request)) : undefined);
      if (result !== undefined) messages.push(await encodeResult(codec, result));
    }
    // One batch can hold more than the broker takes in one request (1 MB record batches): chunk it.
    for (let i = 0; i < messages.length; i += SEND_CHUNK) await producer.send({ topic: settings.output, messages: messages.slice(i, i + SEND_CHUNK) });
    produced += messages.length;
    const last = batch.messages[batch.messages.length - 1];
    if (last !== undefined) resolveOffset(last.offset);
    await heartbeat();
  },
});
