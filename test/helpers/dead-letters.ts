import { inject } from 'vitest';
import { deadLetterFromAvro, type DeadLetter } from '../../src/contracts/dead-letter.ts';
import { createRegistry } from '../../src/schema/codec.ts';
import { eventually, testKafka, uniqueName } from './kafka.ts';

/** Reads `count` committed dead letters from a topic. */
export async function decodeDeadLetter(topic: string, count: number): Promise<DeadLetter[]> {
  const registry = createRegistry(inject('schemaRegistryUrl'));
  const consumer = testKafka().consumer({ groupId: uniqueName('dlq-reader'), readUncommitted: false });
  const letters: DeadLetter[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        if (message.value !== null) letters.push(deadLetterFromAvro(await registry.decode(message.value)));
      },
    });
    await eventually(() => (letters.length >= count ? true : undefined), 30_000, `${count} dead letters`);
    return letters;
  } finally {
    await consumer.disconnect();
  }
}
