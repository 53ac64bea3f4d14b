import { describe, expect, it } from 'vitest';
import { ProduceProgress } from '../../src/kafka/produce-progress.ts';

const answer = (topicName: string, partition: number, baseOffset = '0') => ({ topicName, partition, baseOffset });

describe('ProduceProgress', () => {
  it('a partition answered in one attempt is not sent again; the others stay pending, whichever broker answered', () => {
    const progress = new ProduceProgress<string>();
    progress.plan('results', { 0: ['r1'], 1: ['r2', 'r3'] });
    progress.plan('ledger', { 4: ['checkpoint'] });
    // The first attempt: the broker leading ledger[4] and results[1] answered; results[0]'s refused.
    progress.answered([answer('ledger', 4), answer('results', 1)]);
    expect(progress.done).toBe(false);
    expect([...progress.pending()]).toEqual([['results', [{ topic: 'results', partition: 0, messages: ['r1'] }]]]);
    // results[0] moved to the broker that answered before: it is still sent, and then done.
    progress.answered([answer('results', 0, '7')]);
    expect(progress.done).toBe(true);
    expect(progress.pending().size).toBe(0);
    expect(progress.answers()).toEqual([answer('results', 0, '7'), answer('results', 1), answer('ledger', 4)]);
  });

  it('keeps the partitions a topic’s messages were first given (a keyless message must not move on a retry)', () => {
    const progress = new ProduceProgress<string>();
    progress.plan('results', { 2: ['a'] });
    expect(progress.isPlanned('results')).toBe(true);
    progress.plan('results', { 5: ['a'] });
    expect([...progress.pending()]).toEqual([['results', [{ topic: 'results', partition: 2, messages: ['a'] }]]]);
  });

  it('ignores answers for partitions it did not send, and partitions without messages', () => {
    const progress = new ProduceProgress<string>();
    progress.plan('results', { 0: ['a'], 1: [] });
    progress.answered([answer('results', 9), answer('other', 0)]);
    expect(progress.done).toBe(false);
    progress.answered([answer('results', 0)]);
    expect(progress.done).toBe(true);
  });
});
