/**
 * The bench's reading of sms_worker_send_stage_seconds over a window: two scrapes of a real
 * registry's /metrics text, one priority's stages, the mean and the bucket holding the p99.
 */
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { parseSendStages, stagesOver, stagesText } from '../../bench/lib/send-stages.ts';

describe('send stages over a window', () => {
  it('counts only what was observed between the scrapes, for the priority asked', async () => {
    const metrics = createMetrics();
    const observe = (priority: string, stage: string, seconds: number, times = 1): void => {
      for (let i = 0; i < times; i += 1) metrics.sendStages.observe({ priority, stage }, seconds);
    };
    observe('high', 'mark', 2, 50); // before the window: not counted
    const from = parseSendStages(await metrics.registry.metrics(), 'high');

    observe('high', 'delivery', 0.002, 99);
    observe('high', 'delivery', 0.2, 1);
    observe('high', 'mark', 0.02, 100);
    observe('normal', 'mark', 30, 100); // the other priority: not counted
    const to = parseSendStages(await metrics.registry.metrics(), 'high');

    const stages = stagesOver(from, to);
    expect(stages.delivery?.count).toBe(100);
    expect(stages.delivery?.meanMs).toBeCloseTo(3.98, 6);
    // 99 of 100 within 2.5 ms: the p99 is in the 2.5 ms bucket, not the 250 ms one of the slowest.
    expect(stages.delivery?.p99AtMostMs).toBe(2.5);
    expect(stages.mark).toEqual({ count: 100, meanMs: expect.closeTo(20, 6) as number, p99AtMostMs: 25 });
    expect(stages.preparation).toBeUndefined();
    expect(stagesText(stages)).toBe('delivery 4.0 ms (p99 ≤ 2.5 ms), mark 20 ms (p99 ≤ 25 ms)');
  });

  it('says so when nothing was read', () => {
    expect(stagesText(stagesOver({}, {}))).toBe('not read');
  });
});
