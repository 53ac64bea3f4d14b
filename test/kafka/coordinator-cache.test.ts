import { describe, expect, it } from 'vitest';
import { coordinatorKey, CoordinatorMemory, forgetsCoordinator, groupCoordinatorMoving } from '../../src/kafka/coordinator-cache.ts';

describe('groupCoordinatorMoving', () => {
  it("calls sendOffsets again for a group coordinator that moved, is not available or is loading (kafkajs 2.2.4's names, codes 16, 15, 14)", () => {
    for (const type of ['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE', 'GROUP_LOAD_IN_PROGRESS'])
      expect(groupCoordinatorMoving({ name: 'KafkaJSProtocolError', type })).toBe(true);
  });

  it('not for anything else: fenced, a rebalance, a connection error (kafkajs retries those itself), not an error', () => {
    for (const type of ['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'REBALANCE_IN_PROGRESS', 'UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION'])
      expect(groupCoordinatorMoving({ name: 'KafkaJSProtocolError', type })).toBe(false);
    expect(groupCoordinatorMoving({ name: 'KafkaJSConnectionError' })).toBe(false);
    expect(groupCoordinatorMoving('not an error')).toBe(false);
    expect(groupCoordinatorMoving(null)).toBe(false);
  });
});

describe('forgetsCoordinator', () => {
  it('reads "not the coordinator" and "coordinator not available" (kafkajs 2.2.4\'s names, codes 16 and 15) as a coordinator to forget', () => {
    for (const type of ['NOT_COORDINATOR_FOR_GROUP', 'GROUP_COORDINATOR_NOT_AVAILABLE']) {
      expect(forgetsCoordinator({ name: 'KafkaJSProtocolError', type })).toBe(true);
    }
  });

  it('forgets it on a failed connection too, and on nothing else (fenced, rebalancing, loading)', () => {
    expect(forgetsCoordinator({ name: 'KafkaJSConnectionError' })).toBe(true);
    expect(forgetsCoordinator({ name: 'KafkaJSConnectionClosedError' })).toBe(true);
    expect(forgetsCoordinator({ name: 'KafkaJSRequestTimeoutError' })).toBe(true);
    expect(forgetsCoordinator(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(forgetsCoordinator({ name: 'KafkaJSProtocolError', type: 'INVALID_PRODUCER_EPOCH' })).toBe(false);
    expect(forgetsCoordinator({ name: 'KafkaJSProtocolError', type: 'REBALANCE_IN_PROGRESS' })).toBe(false);
    expect(forgetsCoordinator({ name: 'KafkaJSProtocolError', type: 'GROUP_LOAD_IN_PROGRESS' })).toBe(false);
    expect(forgetsCoordinator('not an error')).toBe(false);
    expect(forgetsCoordinator(null)).toBe(false);
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
