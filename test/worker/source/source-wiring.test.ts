import { describe, expect, it } from 'vitest';
import { groupTiming } from '../../../src/worker/source/source-wiring.ts';

describe('groupTiming', () => {
  it('heartbeats every 100 ms, or a third of a short session timeout', () => {
    expect(groupTiming(45_000).heartbeatInterval).toBe(100);
    expect(groupTiming(240).heartbeatInterval).toBe(80);
  });

  it("never lets a fetch wait longer than a heartbeat interval: kafkajs heartbeats (and rejoins) only between fetches, and an idle or all-paused consumer waits the fetch's maximum", () => {
    for (const sessionTimeoutMs of [600, 900, 6_000, 10_000, 45_000, 300_000]) {
      const { heartbeatInterval, maxWaitTimeInMs } = groupTiming(sessionTimeoutMs);
      expect(maxWaitTimeInMs).toBeLessThanOrEqual(heartbeatInterval);
      expect(maxWaitTimeInMs).toBeGreaterThan(0);
    }
  });
});
