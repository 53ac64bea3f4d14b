import { describe, expect, it } from 'vitest';
import { decisiveFailure } from '../../src/kafka/send-messages.ts';

// kafkajs's own rule (src/protocol/error.js): these types mean the metadata is stale.
const staleMetadata = (error: unknown): boolean =>
  ['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION'].includes((error as { type?: string }).type ?? '');

const timeout = { name: 'KafkaJSRequestTimeoutError', retriable: true };
const notLeader = { name: 'KafkaJSProtocolError', type: 'NOT_LEADER_FOR_PARTITION', retriable: true };
const tooLarge = { name: 'KafkaJSProtocolError', type: 'MESSAGE_TOO_LARGE', retriable: false };
const closed = { name: 'KafkaJSConnectionClosedError', retriable: true };

describe('decisiveFailure: which of an attempt’s failed requests decides the retry', () => {
  it('one that cannot succeed on a retry wins, wherever it settled (a batch too large is split by the caller, not retried)', () => {
    expect(decisiveFailure([timeout, notLeader, tooLarge], staleMetadata)).toBe(tooLarge);
  });

  it('else a leader that moved or a closed connection beats a timeout, so the next attempt refreshes the metadata first', () => {
    expect(decisiveFailure([timeout, notLeader], staleMetadata)).toBe(notLeader);
    expect(decisiveFailure([timeout, closed], staleMetadata)).toBe(closed);
  });

  it('else the first, and a lone failure is itself', () => {
    const other = { name: 'KafkaJSLockTimeout', retriable: true };
    expect(decisiveFailure([timeout, other], staleMetadata)).toBe(timeout);
    expect(decisiveFailure([other], staleMetadata)).toBe(other);
    const thrown = new TypeError('not kafkajs');
    expect(decisiveFailure([thrown], staleMetadata)).toBe(thrown);
  });
});
