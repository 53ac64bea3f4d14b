import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartPodSettings } from '../../bench/lib/chart-settings.ts';

function values(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'chart-settings-')), 'values.yaml');
  writeFileSync(file, yaml);
  return file;
}

describe('chartPodSettings', () => {
  it("reads the shipped chart's defaults: grace = shutdown budget + 15 s, the readiness probe's timing, the memory settings", () => {
    const pod = chartPodSettings();
    expect(pod.terminationGraceMs).toBe(pod.shutdownTimeoutMs + 15_000);
    expect(pod.readinessPeriodMs).toBeGreaterThan(0);
    expect(pod.env['SHUTDOWN_TIMEOUT_MS']).toBe(String(pod.shutdownTimeoutMs));
    expect(pod.env['NODE_OPTIONS']).toMatch(/--max-old-space-size=\d+/);
    expect(pod.env['HEAP_GROWING_PERCENT']).toMatch(/^\d+$/);
  });

  it('takes an explicit terminationGracePeriodSeconds, and Kubernetes defaults for a probe the chart leaves out', () => {
    const pod = chartPodSettings(values('resources:\n  limits:\n    memory: 384Mi\nshutdownTimeoutSeconds: 20\nterminationGracePeriodSeconds: 60\n'));
    expect(pod).toMatchObject({ shutdownTimeoutMs: 20_000, terminationGraceMs: 60_000, readinessInitialDelayMs: 0, readinessPeriodMs: 10_000 });
  });
});
