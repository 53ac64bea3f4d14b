import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/metrics.ts';
import { documentedMetrics } from '../helpers/doc-metrics.ts';

describe('docs/metrics.md metrics table', () => {
  it('lists exactly the sms_worker_ metrics the worker registers (Node process metrics aside), with their types and labels', async () => {
    const metrics = createMetrics();
    const registered = [];
    for (const { name, type } of await metrics.registry.getMetricsAsJSON()) {
      const metric = metrics.registry.getSingleMetric(name);
      // collectDefaultMetrics' process and Node.js runtime metrics carry the prefix too; docs/metrics.md points to prom-client for them.
      if (/^sms_worker_(process_|nodejs_)/.test(name)) continue;
      registered.push({ name, type: String(type), labels: [...((metric as unknown as { labelNames?: string[] }).labelNames ?? [])] });
    }
    const documented = documentedMetrics().map((m) => ({ name: m.name, type: m.type, labels: [...m.labels] }));
    const byName = (a: { name: string }, b: { name: string }): number => a.name.localeCompare(b.name);
    expect(documented.sort(byName)).toEqual(registered.sort(byName));
  });
});
