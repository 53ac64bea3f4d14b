import { describe, expect, it } from 'vitest';
import { isRoutineRebalance } from '../../src/kafka/client.ts';

describe('kafkajs log lines', () => {
  it('a heartbeat answered "group is rebalancing" is routine, not an error', () => {
    expect(isRoutineRebalance('[Runner] The group is rebalancing, re-joining', { groupId: 'g' })).toBe(true);
    expect(isRoutineRebalance('[Connection] Response Heartbeat(key: 12, version: 3)', { error: 'The group is rebalancing, so a rejoin is needed' })).toBe(true);
    expect(isRoutineRebalance('[Consumer] Crash: KafkaJSNumberOfRetriesExceeded', { error: 'Connection error: ECONNREFUSED' })).toBe(false);
  });
});
