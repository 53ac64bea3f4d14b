import { describe, expect, it } from 'vitest';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { isRoutineRebalance, kafkaLineLevel } from '../../src/kafka/client.ts';

const { logLevel } = kafkajs;
const concurrent = 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing';

describe('kafkajs log lines', () => {
  it('a heartbeat answered "group is rebalancing" is routine, not an error', () => {
    expect(isRoutineRebalance('[Runner] The group is rebalancing, re-joining', { groupId: 'g' })).toBe(true);
    expect(isRoutineRebalance('[Connection] Response Heartbeat(key: 12, version: 3)', { error: 'The group is rebalancing, so a rejoin is needed' })).toBe(true);
    expect(isRoutineRebalance('[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', { error: 'Connection error: ECONNREFUSED' })).toBe(false);
    expect(kafkaLineLevel(logLevel.ERROR, '[Runner] The group is rebalancing, re-joining', { groupId: 'g' })).toBe('info');
  });

  it('CONCURRENT_TRANSACTIONS (a transaction begun while the previous commit is completed, retried at once) is debug: it comes up to once per transaction under load', () => {
    expect(kafkaLineLevel(logLevel.ERROR, 'Response AddPartitionsToTxn(key: 24, version: 1)', { error: concurrent })).toBe('debug');
    expect(kafkaLineLevel(logLevel.ERROR, `Failed to send messages: ${concurrent}`, { retryCount: 0 })).toBe('debug');
  });

  it('other errors stay errors; kafkajs info is debug, its debug trace; two known notices are dropped', () => {
    expect(kafkaLineLevel(logLevel.ERROR, '[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', { error: 'Connection error: ECONNREFUSED' })).toBe('error');
    expect(kafkaLineLevel(logLevel.WARN, 'something', {})).toBe('warn');
    expect(kafkaLineLevel(logLevel.INFO, 'Starting', {})).toBe('debug');
    expect(kafkaLineLevel(logLevel.DEBUG, 'Request Produce', {})).toBe('trace');
    expect(kafkaLineLevel(logLevel.WARN, 'Limiting retries for the idempotent producer may invalidate EoS guarantees', {})).toBe('drop');
    expect(kafkaLineLevel(logLevel.WARN, 'KafkaJS v2.0.0 switched default partitioner.', {})).toBe('drop');
  });
});
