import { describe, expect, it } from 'vitest';
import { isTopicNotReadyYet } from '../../src/kafka/admin.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';

const protocolError = (type: string, code: number): Error =>
  new kafkajs.KafkaJSProtocolError(Object.assign(new Error(`${type} from the broker`), { type, code, retriable: true }));

describe('isTopicNotReadyYet', () => {
  it('a just-created topic the broker does not know yet, or whose leader is not elected yet, is waited for', () => {
    expect(isTopicNotReadyYet(protocolError('UNKNOWN_TOPIC_OR_PARTITION', 3))).toBe(true);
    expect(isTopicNotReadyYet(protocolError('LEADER_NOT_AVAILABLE', 5))).toBe(true);
  });

  it('also when kafkajs gave up retrying it and throws its own error with the broker’s as its cause', () => {
    const exhausted = new kafkajs.KafkaJSNumberOfRetriesExceeded(protocolError('LEADER_NOT_AVAILABLE', 5), { retryCount: 5, retryTime: 1_000 });
    expect(isTopicNotReadyYet(exhausted)).toBe(true);
    expect(isTopicNotReadyYet(new kafkajs.KafkaJSNumberOfRetriesExceeded(new Error('connection refused'), { retryCount: 5, retryTime: 1_000 }))).toBe(false);
  });

  it('any other failure ends the wait at once', () => {
    expect(isTopicNotReadyYet(protocolError('TOPIC_AUTHORIZATION_FAILED', 29))).toBe(false);
    expect(isTopicNotReadyYet(new Error('connection refused'))).toBe(false);
    expect(isTopicNotReadyYet(undefined)).toBe(false);
  });
});
