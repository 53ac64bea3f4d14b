import { spawnSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const MODULE = pathToFileURL(fileURLToPath(new URL('../../src/cli/heap-growing.ts', import.meta.url))).href;

/**
 * Full (mark-compact) collections in a fresh process under a 460 MiB heap cap (the chart's) while it
 * keeps about 100 MB alive and replaces it ten times over: the pattern of a worker draining a
 * backlog, where records live long enough to be promoted and then die.
 */
function fullCollections(percent: number): number {
  const script = `
    import { PerformanceObserver, constants } from 'node:perf_hooks';
    import { applyHeapGrowingPercent } from ${JSON.stringify(MODULE)};
    applyHeapGrowingPercent(${percent});
    let full = 0;
    const observer = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) full += 1;
    });
    observer.observe({ entryTypes: ['gc'] });
    const live = new Array(1_000_000);
    for (let i = 0; i < 10_000_000; i += 1) live[i % live.length] = { i, s: 'x' + i };
    setTimeout(() => { observer.disconnect(); console.log(full); }, 100);
  `;
  const child = spawnSync(process.execPath, ['--max-old-space-size=460', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
  expect(child.status, child.stderr).toBe(0);
  return Number(child.stdout.trim());
}

describe('applyHeapGrowingPercent', () => {
  it('lets the heap grow further between full collections, so the same work needs fewer of them', () => {
    const ownFactor = fullCollections(0);
    const grown = fullCollections(300);
    expect(ownFactor).toBeGreaterThan(0);
    expect(grown).toBeLessThan(ownFactor);
  }, 90_000);
});
