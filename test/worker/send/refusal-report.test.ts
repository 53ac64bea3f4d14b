import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import { createLogger } from '../../../src/observability/logger.ts';
import { RefusalReport } from '../../../src/worker/send/refusal-report.ts';

describe('RefusalReport: the refusal metrics per account', () => {
  it("RefusalReport: each account's funds ceiling and paused-routes count start at 0; a route paused on backup is backup's series alone", async () => {
    const metrics = createMetrics();
    const lines: string[] = [];
    const report = new RefusalReport(metrics, createLogger('info', {}, { write: (line: string) => void lines.push(line) }), ['default', 'backup']);
    expect((await metrics.fundsCeiling.get()).values.map((v) => [v.labels, v.value])).toEqual([
      [{ account: 'default' }, 0],
      [{ account: 'backup' }, 0],
    ]);
    report.holdsChanged({ routes: [{ key: 'text:AU', operation: 'sms.message.send', regions: ['AU'], since: 1_700_000_000_000 }], costCeiling: 3 }, 'backup');
    report.refusal('101301', 'route', { operation: 'sms.message.send', regions: ['AU'], costUnits: 1 }, 'backup');
    const exposition = await metrics.registry.metrics();
    expect(exposition).toContain('sms_worker_paused_routes{account="backup"} 1');
    expect(exposition).toContain('sms_worker_paused_routes{account="default"} 0');
    expect(exposition).toContain('sms_worker_funds_cost_ceiling{account="backup"} 3');
    expect(exposition).toContain('sms_worker_route_paused_since_timestamp_seconds{account="backup",operation="text",region="AU"} 1700000000');
    expect(exposition).toContain('sms_worker_refusals_total{account="backup",code="101301",scope="route"} 1');
    expect(lines.join('')).toContain('on account backup');
    // default's holds changing leave backup's paused route alone.
    report.holdsChanged({ routes: [], costCeiling: undefined }, 'default');
    expect(await metrics.registry.metrics()).toContain('sms_worker_paused_routes{account="backup"} 1');
    report.holdsChanged({ routes: [], costCeiling: undefined }, 'backup');
    expect(await metrics.registry.metrics()).not.toContain('region="AU"');
  });
});
