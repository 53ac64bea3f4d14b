import { describe, expect, it } from 'vitest';
import { createKafka } from '../../src/kafka/client.ts';
import { FencedError } from '../../src/kafka/ports.ts';
import { TRANSACTION_REQUEST_RETRY, TransactionalProducers } from '../../src/kafka/transactional-producers.ts';
import { createLogger } from '../../src/observability/logger.ts';

describe('TransactionalProducers: generations', () => {
  it('refuses a claim older than the newest one that used the transactional id (a batch left from a previous generation)', async () => {
    // Nothing listens on this port: creating a producer fails, which is all this needs.
    const kafka = createKafka({ brokers: ['127.0.0.1:1'], clientId: 't', ssl: false, sasl: undefined }, createLogger('silent'), 't', { retry: { retries: 0 } });
    const producers = new TransactionalProducers(kafka, 'p');
    await expect(producers.forPartition('cmds', 0, 2)).rejects.not.toBeInstanceOf(FencedError);
    await expect(producers.forPartition('cmds', 0, 1)).rejects.toBeInstanceOf(FencedError);
    await producers.closeAll();
  });
});

describe('TransactionalProducers: request retries', () => {
  it('creates each producer with the short retry for back-to-back transactions (CONCURRENT_TRANSACTIONS), not the client default', async () => {
    const kafka = createKafka({ brokers: ['127.0.0.1:1'], clientId: 't', ssl: false, sasl: undefined }, createLogger('silent'), 't', { retry: { retries: 0 } });
    const configs: unknown[] = [];
    const watched = new Proxy(kafka, {
      get: (target, property, receiver) =>
        property === 'producer'
          ? (config: Parameters<typeof kafka.producer>[0]) => {
              configs.push(config);
              return target.producer({ ...config, retry: { retries: 0 } });
            }
          : (Reflect.get(target, property, receiver) as unknown),
    });
    const producers = new TransactionalProducers(watched, 'p');
    await expect(producers.forPartition('cmds', 0, 1)).rejects.toThrow();
    expect(configs).toEqual([expect.objectContaining({ transactionalId: 'p-cmds-0', retry: TRANSACTION_REQUEST_RETRY })]);
    expect(TRANSACTION_REQUEST_RETRY.initialRetryTime).toBeLessThanOrEqual(20);
    await producers.closeAll();
  });
});
