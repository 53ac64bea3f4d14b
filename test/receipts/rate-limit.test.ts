import { describe, expect, it } from 'vitest';
import { SourceRateLimiter, sourceAddress } from '../../src/receipts/rate-limit.ts';

describe('SourceRateLimiter', () => {
  it('allows a burst, then the sustained rate, per source', () => {
    const limiter = new SourceRateLimiter({ perSecond: 2, burst: 3, maxSources: 10 });
    const t = 1_000_000;
    expect([1, 2, 3, 4].map(() => limiter.take('a', t))).toEqual([true, true, true, false]);
    // Another source has its own bucket.
    expect(limiter.take('b', t)).toBe(true);
    expect(limiter.retryAfterSeconds('a')).toBe(1);
    // Half a second at 2/s refills one token.
    expect(limiter.take('a', t + 500)).toBe(true);
    expect(limiter.take('a', t + 500)).toBe(false);
    // A long pause refills to the burst, not beyond.
    expect([1, 2, 3, 4].map(() => limiter.take('a', t + 60_000))).toEqual([true, true, true, false]);
  });

  it('remembers at most maxSources, forgetting the least recently seen', () => {
    const limiter = new SourceRateLimiter({ perSecond: 1, burst: 1, maxSources: 2 });
    expect(limiter.take('a', 0)).toBe(true);
    expect(limiter.take('b', 0)).toBe(true);
    expect(limiter.take('a', 0)).toBe(false); // a is now the most recent
    expect(limiter.take('c', 0)).toBe(true); // evicts b
    expect(limiter.size).toBe(2);
    expect(limiter.take('a', 0)).toBe(false); // a was kept, still empty
    expect(limiter.take('b', 0)).toBe(true); // b was forgotten: full again
  });
});

describe('sourceAddress', () => {
  it('is the socket peer unless proxies are trusted', () => {
    expect(sourceAddress('10.0.0.5', '1.2.3.4', 0)).toBe('10.0.0.5');
    expect(sourceAddress(undefined, undefined, 0)).toBe('unknown');
  });

  it('behind N trusted proxies, takes the entry the proxies appended, never a client-supplied one', () => {
    expect(sourceAddress('10.0.0.5', 'spoofed, 203.0.113.7', 1)).toBe('203.0.113.7');
    expect(sourceAddress('10.0.0.5', 'spoofed, 203.0.113.7, 10.0.0.9', 2)).toBe('203.0.113.7');
    expect(sourceAddress('10.0.0.5', undefined, 1)).toBe('10.0.0.5');
    expect(sourceAddress('10.0.0.5', '203.0.113.7', 2)).toBe('10.0.0.5');
  });
});
