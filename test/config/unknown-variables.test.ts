import { describe, expect, it } from 'vitest';
import { editDistance, unknownVariables } from '../../src/config/unknown-variables.ts';

describe('editDistance', () => {
  it('counts insertions, deletions, substitutions and adjacent transpositions as one each', () => {
    expect(editDistance('MAX_IN_FLIGHT', 'MAX_IN_FLIGHT')).toBe(0);
    expect(editDistance('MAX_INFLIGHT', 'MAX_IN_FLIGHT')).toBe(1);
    expect(editDistance('KAFAK_BROKERS', 'KAFKA_BROKERS')).toBe(1);
    expect(editDistance('COMMIT_INTREVAL_MS', 'COMMIT_INTERVAL_MS')).toBe(1);
    expect(editDistance('abc', 'xyz')).toBe(3);
  });

  it('stops counting once the limit is passed', () => {
    expect(editDistance('AAAAAAAAAA', 'BBBBBBBBBB', 2)).toBe(3);
  });
});

describe('unknownVariables', () => {
  it('skips short names and anything far from every known one', () => {
    expect(unknownVariables({ PATH: '/bin', LANG: 'C', HOSTNAME: 'pod-1' }, ['PROVIDER_BASE_URL'])).toEqual([]);
  });

  it('offers the closest known name, ties to the first', () => {
    expect(unknownVariables({ RESULTS_TOPIC: 'x' }, ['RESULT_TOPIC', 'COMMAND_TOPIC'])).toEqual([{ name: 'RESULTS_TOPIC', didYouMean: 'RESULT_TOPIC' }]);
  });
});
