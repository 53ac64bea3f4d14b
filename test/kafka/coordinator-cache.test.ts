import { describe, expect, it } from 'vitest';
import { coordinatorFailure, coordinatorKey, CoordinatorMemory } from '../../src/kafka/coordinator-cache.ts';

describe('coordinatorFailure', () => {
  it('reads "not the coordinator" and "coordinator not available" (kafkajs 2.2.4\'s names, codes 16 and 15) as moved', () => {
    for (const type of ['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE']) {
      expect(coordinatorFailure({ name: 'KafkaJSProtocolError', type })).toBe('moved');
    }
  });

  it('reads a failed connection as connection, and everything else (fenced, rebalancing, loading) as other', () => {
    expect(coordinatorFailure({ name: 'KafkaJSConnectionError' })).toBe('connection');
    expect(coordinatorFailure({ name: 'KafkaJSConnectionClosedError' })).toBe('connection');
    expect(coordinatorFailure({ name: 'KafkaJSRequestTimeoutError' })).toBe('connection');
    expect(coordinatorFailure(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe('connection');
    expect(coordinatorFailure({ name: 'KafkaJSProtocolError', type: 'INVALID_PRODUCER_EPOCH' })).toBe('other');
    expect(coordinatorFailure({ name: 'KafkaJSProtocolError', type: 'REBALANCE_IN_PROGRESS' })).toBe('other');
    expect(coordinatorFailure({ name: 'KafkaJSProtocolError', type: 'GROUP_LOAD_IN_PROGRESS' })).toBe('other');
    expect(coordinatorFailure('not an error')).toBe('other');
    expect(coordinatorFailure(null)).toBe('other');
  });
});

describe('CoordinatorMemory', () => {
  it('keeps groups and transactional ids apart: the same name as each has its own coordinator', () => {
    const memory = new CoordinatorMemory();
    memory.remember(coordinatorKey('orders', 0), 1);
    memory.remember(coordinatorKey('orders', 1), 2);
    expect(memory.recall(coordinatorKey('orders', 0))).toBe(1);
    expect(memory.recall(coordinatorKey('orders', 1))).toBe(2);
  });

  it('forgets a coordinator only while it still names the node that failed: a late failure does not undo a newer lookup', () => {
    const memory = new CoordinatorMemory();
    const key = coordinatorKey('tx-orders-3', 1);
    memory.remember(key, 1);
    memory.remember(key, 2);
    memory.forget(key, 1);
    expect(memory.recall(key)).toBe(2);
    memory.forget(key, 2);
    expect(memory.recall(key)).toBeUndefined();
    expect(memory.size).toBe(0);
  });
});
