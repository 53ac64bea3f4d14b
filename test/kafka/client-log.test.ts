import { describe, expect, it } from 'vitest';
import { isRoutineRebalance } from '../../src/kafka/client.ts';

describe('kafkajs log lines', () => {
  it('a heartbeat answered "group is rebalancing" is routine, not an error', () => {
    expect(isRoutineRebalance('[Runner] The group is rebalancing, re-joining', { groupId: 'g' })).toBe(true);
    expect(isRoutineRebalance('[Connection] Response Heartbeat(key: 12, version: 3)', { error: 'The group is rebalancing, so a rejoin is needed' })).toBe(true);
    expect(isRoutineRebalance('[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', { error: 'Connection error: ECONNREFUSED' })).toBe(false);
  });

  it("a new owner's transaction meeting the fenced owner's one still completing (CONCURRENT_TRANSACTIONS, retried) is routine", () => {
    const concurrent = 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing';
    expect(isRoutineRebalance('Response AddPartitionsToTxn(key: 24, version: 1)', { error: concurrent })).toBe(true);
    expect(isRoutineRebalance(`Failed to send messages: ${concurrent}`, { retryCount: 0 })).toBe(true);
  });
});
