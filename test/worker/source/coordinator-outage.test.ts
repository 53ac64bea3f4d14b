import { describe, expect, it } from 'vitest';
import { COORDINATOR_OUTAGE_LIMIT_MS, CoordinatorOutage } from '../../../src/worker/source/coordinator-outage.ts';

const lookupFailed = { name: 'KafkaJSNonRetriableError', cause: { name: 'KafkaJSGroupCoordinatorNotFound' } };

describe('CoordinatorOutage: how long a consumer restarts after lookups no broker answered', () => {
  it('restarts within the limit, counted from the first such crash since the last join, and not past it', () => {
    let now = 1_000;
    const outage = new CoordinatorOutage(60_000, () => now);
    expect(outage.outageMs).toBeUndefined();
    expect(outage.mayRestart(lookupFailed)).toBe(true);
    now += 30_000;
    expect(outage.mayRestart(lookupFailed)).toBe(true);
    expect(outage.outageMs).toBe(30_000);
    now += 30_001;
    expect(outage.mayRestart(lookupFailed)).toBe(false);
  });

  it('a join ends the outage: the next one is counted afresh', () => {
    let now = 0;
    const outage = new CoordinatorOutage(60_000, () => now);
    outage.mayRestart(lookupFailed);
    now += 59_000;
    outage.joined();
    expect(outage.outageMs).toBeUndefined();
    now += 59_000;
    expect(outage.mayRestart(lookupFailed)).toBe(true);
    now += 59_000;
    expect(outage.mayRestart(lookupFailed)).toBe(true);
  });

  it('leaves every other retriable crash to kafkajs (it restarts), however long the outage', () => {
    let now = 0;
    const outage = new CoordinatorOutage(60_000, () => now);
    outage.mayRestart(lookupFailed);
    now += 10 * 60_000;
    expect(outage.mayRestart({ name: 'KafkaJSConnectionError', retriable: true })).toBe(true);
    expect(outage.mayRestart(lookupFailed)).toBe(false);
  });

  it('defaults to five minutes', () => {
    expect(COORDINATOR_OUTAGE_LIMIT_MS).toBe(300_000);
  });
});
