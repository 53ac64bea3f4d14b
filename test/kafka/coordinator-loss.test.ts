import { describe, expect, it } from 'vitest';
import { isCoordinatorNotFound, isRefusal, LookupRefusals, markCoordinatorNotFoundRetriable } from '../../src/kafka/coordinator-loss.ts';
import kafkajs from '../../src/kafka/kafkajs.ts';

// kafkajs's own error classes, as its cluster and retrier make them.
const errors = kafkajs as unknown as Record<string, new (message: unknown, options?: { cause?: unknown }) => Error & { retriable: boolean }>;
const notFound = (): Error & { retriable: boolean } =>
  new (errors['KafkaJSGroupCoordinatorNotFound'] as (typeof errors)[string])('Failed to find group coordinator');
const nonRetriable = (cause: unknown): Error & { retriable: boolean } => new (errors['KafkaJSNonRetriableError'] as (typeof errors)[string])(cause, { cause });

describe('a coordinator lookup no broker answered', () => {
  it('is recognised as itself and under the wrappers kafkajs puts around it', () => {
    expect(isCoordinatorNotFound(notFound())).toBe(true);
    expect(isCoordinatorNotFound(nonRetriable(nonRetriable(notFound())))).toBe(true);
    expect(isCoordinatorNotFound(new (errors['KafkaJSConnectionError'] as (typeof errors)[string])('Connection error'))).toBe(false);
    expect(isCoordinatorNotFound(undefined)).toBe(false);
    expect(isCoordinatorNotFound('Failed to find group coordinator')).toBe(false);
  });

  it('is marked retriable at its origin only: its wrappers stay non-retriable, so other callers fail as before', () => {
    const lookup = notFound();
    const wrapped = nonRetriable(lookup);
    expect(lookup.retriable).toBe(false);
    markCoordinatorNotFoundRetriable(wrapped);
    expect(lookup.retriable).toBe(true);
    expect(wrapped.retriable).toBe(false);
  });

  it('stays non-retriable when a broker refused the lookup (a group missing from the ACLs): the worker exits naming it', () => {
    const lookup = notFound();
    markCoordinatorNotFoundRetriable(nonRetriable(lookup), { type: 'GROUP_AUTHORIZATION_FAILED', retriable: false });
    expect(lookup.retriable).toBe(false);
  });

  it('ends at a cycle of causes rather than looping', () => {
    const a: { name: string; cause?: unknown } = { name: 'A' };
    a.cause = a;
    expect(isCoordinatorNotFound(a)).toBe(false);
    markCoordinatorNotFoundRetriable(a);
  });
});

describe('LookupRefusals: the last refusal of each lookup, until it ends', () => {
  const refused = { type: 'GROUP_AUTHORIZATION_FAILED', retriable: false };
  const unavailable = { type: 'GROUP_COORDINATOR_NOT_AVAILABLE', retriable: true };

  it('keeps a refusal until it is taken, and only refusals', () => {
    expect(isRefusal(refused)).toBe(true);
    expect(isRefusal(unavailable)).toBe(false);
    expect(isRefusal(new Error('socket hang up'))).toBe(false);
    const refusals = new LookupRefusals();
    refusals.failed('0:g', refused);
    expect(refusals.take('0:g')).toBe(refused);
    expect(refusals.take('0:g')).toBeUndefined();
    refusals.failed('0:g', unavailable);
    expect(refusals.take('0:g')).toBeUndefined();
  });

  it('an answer, or a later failure that is not a refusal, clears it', () => {
    const refusals = new LookupRefusals();
    refusals.failed('0:g', refused);
    refusals.answered('0:g');
    expect(refusals.take('0:g')).toBeUndefined();
    refusals.failed('0:g', refused);
    refusals.failed('0:g', unavailable);
    expect(refusals.take('0:g')).toBeUndefined();
  });

  it('is bounded: past 1,000 keys the oldest is dropped', () => {
    const refusals = new LookupRefusals();
    for (let i = 0; i < 1_500; i += 1) refusals.failed(`0:g${i}`, refused);
    expect(refusals.size).toBe(1_000);
    expect(refusals.take('0:g0')).toBeUndefined();
    expect(refusals.take('0:g1499')).toBe(refused);
  });
});
