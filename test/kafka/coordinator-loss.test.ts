import { describe, expect, it } from 'vitest';
import { crashVerdict, isBrokerUnreachable, isCoordinatorNotFound, isRefusal, LookupRefusals, mayRetryJoin } from '../../src/kafka/coordinator-loss.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';

// kafkajs's own error classes, as its cluster, retrier and runner make them.
type ErrorClass = new (message: unknown, options?: { cause?: unknown }) => Error & { retriable: boolean };
const errors = kafkajs as unknown as Record<string, ErrorClass>;
const notFound = (): Error => new (errors['KafkaJSGroupCoordinatorNotFound'] as ErrorClass)('Failed to find group coordinator');
const nonRetriable = (cause: unknown): Error => new (errors['KafkaJSNonRetriableError'] as ErrorClass)(cause, { cause });
const refused = { type: 'GROUP_AUTHORIZATION_FAILED', retriable: false, message: 'Not authorized to access group: Group authorization failed' };
const unavailable = { type: 'GROUP_COORDINATOR_NOT_AVAILABLE', retriable: true };

describe('a coordinator lookup no broker answered', () => {
  it('is recognised as itself and under the wrappers kafkajs puts around it (retrier, runner)', () => {
    expect(isCoordinatorNotFound(notFound())).toBe(true);
    expect(isCoordinatorNotFound(nonRetriable(nonRetriable(notFound())))).toBe(true);
    expect(isCoordinatorNotFound(new (errors['KafkaJSConnectionError'] as ErrorClass)('Connection error'))).toBe(false);
    expect(isCoordinatorNotFound(undefined)).toBe(false);
    expect(isCoordinatorNotFound('Failed to find group coordinator')).toBe(false);
  });

  it('restarts the consumer unless a broker refused the lookup; any other crash is kafkajs’s to decide', () => {
    expect(crashVerdict(nonRetriable(notFound()), undefined)).toBe('restart');
    expect(crashVerdict(nonRetriable(notFound()), refused)).toBe('refused');
    expect(crashVerdict(new (errors['KafkaJSConnectionError'] as ErrorClass)('Connection error'), undefined)).toBe('as-is');
    expect(crashVerdict(new (errors['KafkaJSConnectionError'] as ErrorClass)('Connection error'), refused)).toBe('as-is');
  });

  it('ends at a cycle of causes rather than looping', () => {
    const a: { name: string; cause?: unknown } = { name: 'A' };
    a.cause = a;
    expect(isCoordinatorNotFound(a)).toBe(false);
  });
});

describe('mayRetryJoin: a failed rejoin tried again in place, or a crash', () => {
  // A connection error without a code (kafkajs's "Not connected", "Connection timeout"): nothing says no request went out.
  const connection = (): Error => new (errors['KafkaJSConnectionError'] as ErrorClass)('Connection timeout');
  const loading = { type: 'GROUP_LOAD_IN_PROGRESS', retriable: true, message: 'The coordinator is loading and hence can’t process requests' };

  it('tries again what a broker restarting or a coordinator moving looks like', () => {
    expect(mayRetryJoin(notFound(), undefined)).toBe(true);
    expect(mayRetryJoin(loading, undefined)).toBe(true);
    expect(mayRetryJoin(unavailable, undefined)).toBe(true);
  });

  it('tries again a connection the broker refused (nothing was written on it: a broker killed, until it is back)', () => {
    const refusedConnection = new (errors['KafkaJSConnectionError'] as unknown as new (m: string, o: { code: string }) => Error)(
      'Connection error: connect ECONNREFUSED 127.0.0.1:9092',
      { code: 'ECONNREFUSED' },
    );
    expect(mayRetryJoin(refusedConnection, undefined)).toBe(true);
    expect(mayRetryJoin(nonRetriable(refusedConnection), undefined)).toBe(true);
    expect(mayRetryJoin(refusedConnection, refused)).toBe(false);
  });

  it('crashes on a connection lost under a request or a timeout: the JoinGroup may have landed', () => {
    const reset = new (errors['KafkaJSConnectionError'] as unknown as new (m: string, o: { code: string }) => Error)('Connection error: read ECONNRESET', {
      code: 'ECONNRESET',
    });
    expect(mayRetryJoin(reset, undefined)).toBe(false);
    expect(mayRetryJoin(connection(), undefined)).toBe(false);
    expect(mayRetryJoin(new (errors['KafkaJSRequestTimeoutError'] as ErrorClass)('Request JoinGroup(key: 11, version: 5) timed out'), undefined)).toBe(false);
  });

  it('crashes on a refusal, recorded for the lookup or in the chain, and on any other non-retriable error', () => {
    expect(mayRetryJoin(notFound(), refused)).toBe(false);
    expect(mayRetryJoin(loading, refused)).toBe(false);
    expect(mayRetryJoin(refused, undefined)).toBe(false);
    expect(mayRetryJoin(nonRetriable(refused), undefined)).toBe(false);
    expect(mayRetryJoin(nonRetriable(connection()), undefined)).toBe(false);
    expect(mayRetryJoin({ type: 'INCONSISTENT_GROUP_PROTOCOL', retriable: false }, undefined)).toBe(false);
    // kafkajs retries this one itself, as a rebalance; what reaches here after its retries is theirs to end.
    expect(mayRetryJoin({ type: 'NOT_COORDINATOR_FOR_GROUP', retriable: true }, undefined)).toBe(false);
    expect(mayRetryJoin(undefined, undefined)).toBe(false);
    expect(mayRetryJoin('Connection error', undefined)).toBe(false);
  });
});

describe('LookupRefusals: the brokers’ refusals of each lookup key, until a broker answers it', () => {
  it('a refusal is an authorization failure, nothing else', () => {
    expect(isRefusal(refused)).toBe(true);
    expect(isRefusal({ type: 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED', retriable: false })).toBe(true);
    expect(isRefusal(unavailable)).toBe(false);
    // Non-retriable, but no refusal: kafkajs's UNKNOWN (-1), a broker's own trouble.
    expect(isRefusal({ type: 'UNKNOWN', retriable: false })).toBe(false);
    expect(isRefusal(new Error('socket hang up'))).toBe(false);
  });

  it('keeps a refusal through failures that are not refusals (one broker refusing, another unreachable), until an answer', () => {
    const refusals = new LookupRefusals();
    refusals.failed('0:g', unavailable);
    expect(refusals.refusal('0:g')).toBeUndefined();
    refusals.failed('0:g', refused);
    refusals.failed('0:g', unavailable);
    expect(refusals.refusal('0:g')).toBe(refused);
    expect(refusals.refusal('1:g')).toBeUndefined();
    refusals.answered('0:g');
    expect(refusals.refusal('0:g')).toBeUndefined();
  });

  it('is bounded: past 1,000 keys the oldest is dropped', () => {
    const refusals = new LookupRefusals();
    for (let i = 0; i < 1_500; i += 1) refusals.failed(`0:g${i}`, refused);
    expect(refusals.size).toBe(1_000);
    expect(refusals.refusal('0:g0')).toBeUndefined();
    expect(refusals.refusal('0:g1499')).toBe(refused);
  });
});

describe('isBrokerUnreachable: what a fetch loop waits out in place', () => {
  const named = (name: string): ErrorClass => errors[name] as ErrorClass;

  it('is a pool without brokers, a connection refused or reset, or one closed under a request, also under kafkajs’s wrappers', () => {
    const refusedConnection = Object.assign(new (named('KafkaJSConnectionError'))('Connection error: connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(isBrokerUnreachable(new (named('KafkaJSNoBrokerAvailableError'))('No broker available'))).toBe(true);
    expect(isBrokerUnreachable(refusedConnection)).toBe(true);
    expect(isBrokerUnreachable(nonRetriable(nonRetriable(refusedConnection)))).toBe(true);
    expect(isBrokerUnreachable(new (named('KafkaJSNumberOfRetriesExceeded'))(refusedConnection, { cause: refusedConnection }))).toBe(true);
    expect(isBrokerUnreachable(new (named('KafkaJSConnectionClosedError'))('Closed connection'))).toBe(true);
  });

  it('is not a broker’s answer, a rebalance or anything else', () => {
    expect(isBrokerUnreachable({ type: 'REBALANCE_IN_PROGRESS', retriable: false })).toBe(false);
    expect(isBrokerUnreachable({ type: 'UNKNOWN_MEMBER_ID', retriable: false })).toBe(false);
    expect(isBrokerUnreachable(nonRetriable(refused))).toBe(false);
    expect(isBrokerUnreachable(new Error('boom'))).toBe(false);
    expect(isBrokerUnreachable(undefined)).toBe(false);
  });
});
