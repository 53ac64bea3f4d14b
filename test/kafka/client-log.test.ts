import { describe, expect, it } from 'vitest';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { isBrokerMove, isRoutineRebalance, isTopicNotYetApplied, kafkaLineLevel } from '../../src/kafka/client.ts';

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

  it('a request answered "not the coordinator", "coordinator loading", "not the leader" (a broker restarting, retried by kafkajs) is a warning', () => {
    const answered = (error: string): Record<string, unknown> => ({ error, correlationId: 7, size: 10 });
    for (const error of [
      'This is not the correct coordinator for this group',
      "The coordinator is loading and hence can't process requests for this group",
      'The group coordinator is not available',
      'This server is not the leader for that topic-partition',
      'There is no leader for this topic-partition as we are in the middle of a leadership election',
    ]) {
      expect(isBrokerMove('Response InitProducerId(key: 22, version: 1)', answered(error)), error).toBe(true);
      expect(kafkaLineLevel(logLevel.ERROR, 'Response TxnOffsetCommit(key: 28, version: 1)', answered(error))).toBe('warn');
    }
    expect(
      kafkaLineLevel(logLevel.ERROR, "Failed to send messages: The coordinator is loading and hence can't process requests for this group", { retryCount: 0 }),
    ).toBe('warn');
    // A crash that names such an error, and other errors of a request, stay errors.
    expect(
      kafkaLineLevel(logLevel.ERROR, '[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', { error: 'This is not the correct coordinator for this group' }),
    ).toBe('error');
    expect(
      kafkaLineLevel(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', answered('Not authorized to access topics: [Topic authorization failed]')),
    ).toBe('error');
  });

  it('a metadata request answered "does not host this topic-partition" (a topic just created, not yet applied; retried) is a warning, other requests so answered stay errors', () => {
    const answered = { error: 'This server does not host this topic-partition', correlationId: 11, size: 91 };
    expect(isTopicNotYetApplied('Response Metadata(key: 3, version: 6)', answered)).toBe(true);
    expect(kafkaLineLevel(logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', answered)).toBe('warn');
    expect(kafkaLineLevel(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', answered)).toBe('error');
    expect(kafkaLineLevel(logLevel.ERROR, 'Response Metadata(key: 3, version: 6)', { error: 'Connection error: ECONNREFUSED' })).toBe('error');
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
