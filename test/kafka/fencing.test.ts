import { describe, expect, it } from 'vitest';
import { isFencing } from '../../src/kafka/transactional-producers.ts';

describe('isFencing (kafkajs errors that mean another producer owns the transactional id)', () => {
  it.each(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED'])('%s is fencing', (type) => {
    expect(isFencing(Object.assign(new Error('broker said no'), { type }))).toBe(true);
  });

  it.each([
    ['a retriable broker error', Object.assign(new Error('x'), { type: 'COORDINATOR_NOT_AVAILABLE' })],
    ['an error without a type', new Error('x')],
    ['a string', 'PRODUCER_FENCED'],
    ['null', null],
    ['undefined', undefined],
  ])('%s is not fencing', (_, error) => {
    expect(isFencing(error)).toBe(false);
  });
});
