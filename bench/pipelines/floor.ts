/**
 * Floor: the naive worker. eachMessage, one command at a time: decode, validate, await the HTTP
 * call (the project's own provider client, so the HTTP cost is the same as the worker's), await a
 * single-message send, offsets auto-committed. At-least-once.
 */
import { failedResult, sentResult } from '../../src/contracts/result.ts';
import { createProviderClient } from '../../src/provider/client.ts';
import { isProviderError } from '../../src/provider/provider-error.ts';
import { encodeResult, decodeAndValidate, exitOnCrash, resultWithoutSend, setUp, summaryOnSignal } from './common.ts';

const { settings, kafka, codec } = await setUp('floor');
const client = createProviderClient({ baseUrl: settings.providerUrl, accessKeyId: 'bench-access-key', maxSockets: 1 });
const producer = kafka.producer({ allowAutoTopicCreation: false });
const consumer = kafka.consumer({ groupId: settings.group, maxWaitTimeInMs: 100, readUncommitted: false });
let produced = 0;
exitOnCrash('floor', consumer);
summaryOnSignal(
  'floor',
  () => produced,
  async () => {
    await consumer.disconnect();
    await producer.disconnect();
    client.close();
  },
);
await producer.connect();
await consumer.connect();
await consumer.subscribe({ topic: settings.input, fromBeginning: true });
await consumer.run({
  eachMessage: async ({ topic, partition, message }) => {
    const source = { topic, partition, offset: message.offset };
    const decoded = await decodeAndValidate(codec, message.value);
    if (decoded === undefined) return;
    const { command, validation } = decoded;
    let result = resultWithoutSend(command, validation, source);
    if (result === undefined && validation.kind === 'send') {
      try {
        const success = await client.send(validation.request, { correlationId: command.commandId });
        result = sentResult({ command, source, completedAt: Date.now() }, success);
      } catch (error) {
        const code = isProviderError(error) ? error.code : 'INTERNAL_ERROR';
        result = failedResult({ command, source, completedAt: Date.now() }, { code, message: String(error), stage: 'PROVIDER', retryable: true, attempts: 1 });
      }
    }
    if (result === undefined) return;
    await producer.send({ topic: settings.output, messages: [await encodeResult(codec, result)] });
    produced += 1;
  },
});
