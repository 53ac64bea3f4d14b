import { describe, expect, it } from 'vitest';
import { isRejoinError } from '../../src/kafka/command-consumer.ts';

describe('isRejoinError', () => {
  it('is true for the errors after which kafkajs joins the group again', () => {
    for (const type of ['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'NOT_COORDINATOR_FOR_GROUP', 'UNKNOWN_MEMBER_ID']) {
      expect(isRejoinError({ name: 'KafkaJSProtocolError', type })).toBe(true);
    }
  });

  it("is false for anything else, which a waiting batch leaves to the consumer's own next heartbeat", () => {
    expect(isRejoinError({ name: 'KafkaJSConnectionError' })).toBe(false);
    expect(isRejoinError({ name: 'KafkaJSProtocolError', type: 'GROUP_COORDINATOR_NOT_AVAILABLE' })).toBe(false);
    expect(isRejoinError(new Error('boom'))).toBe(false);
    expect(isRejoinError(undefined)).toBe(false);
  });
});
