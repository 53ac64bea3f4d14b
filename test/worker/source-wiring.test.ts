import { describe, expect, it } from 'vitest';
import { groupTiming } from '../../src/worker/source-wiring.ts';

describe('groupTiming', () => {
  it('heartbeats every 300 ms, or a third of a short session timeout', () => {
    expect(groupTiming(45_000).heartbeatInterval).toBe(300);
    expect(groupTiming(600).heartbeatInterval).toBe(200);
  });

  it("never lets a fetch wait longer than a heartbeat interval: kafkajs heartbeats (and rejoins) only between fetches, and an idle or all-paused consumer waits the fetch's maximum", () => {
    for (const sessionTimeoutMs of [600, 900, 6_000, 10_000, 45_000, 300_000]) {
      const { heartbeatInterval, maxWaitTimeInMs } = groupTiming(sessionTimeoutMs);
      expect(maxWaitTimeInMs).toBeLessThanOrEqual(heartbeatInterval);
      expect(maxWaitTimeInMs).toBeGreaterThan(0);
    }
  });
});
