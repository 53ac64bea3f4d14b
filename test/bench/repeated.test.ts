import { describe, expect, it } from 'vitest';
import type { PhaseFigures } from '../../bench/lib/change-figures.ts';
import type { ChangeRunFigures } from '../../bench/lib/change-run.ts';
import type { ChangeSectionFigures } from '../../bench/lib/change-sections.ts';
import { repeatedChangeLine, repeatedChangeLines, repeatedStartUpLine, spread } from '../../bench/lib/repeated.ts';

function phase(p99: number, max: number, silence: number, counts: Partial<Pick<PhaseFigures, 'unknown' | 'sentTwice' | 'lost'>> = {}): PhaseFigures {
  return {
    from: 0,
    to: 15_000,
    published: 4_500,
    sent: 4_500,
    timeToSendP50Ms: 10,
    timeToSendP99Ms: p99,
    timeToSendMaxMs: max,
    longestSilenceMs: silence,
    unknown: counts.unknown ?? 0,
    sentTwice: counts.sentTwice ?? 0,
    lost: counts.lost ?? 0,
  };
}

function run(change: PhaseFigures): ChangeRunFigures {
  return {
    title: 'Rolling update',
    ratePerSecond: 300,
    latency: { kind: 'fixed', ms: 50 },
    env: {},
    steady: phase(40, 90, 50),
    change,
    after: phase(40, 90, 50),
    rate: undefined,
    events: [],
    unplannedExits: [],
    logGaps: 0,
  };
}

describe('spread', () => {
  it('is the median with the min and max, leaving out runs without the figure', () => {
    expect(spread([300, 100, 200])).toEqual({ median: 200, min: 100, max: 300, runs: 3 });
    expect(spread([100, Number.NaN, 300, 200])).toEqual({ median: 200, min: 100, max: 300, runs: 3 });
    expect(spread([100, 400])).toEqual({ median: 250, min: 100, max: 400, runs: 2 });
    expect(spread([]).runs).toBe(0);
  });
});

describe('repeated change sections', () => {
  it('judges time to send on the median of the runs: one noisy run does not decide', () => {
    const line = repeatedChangeLine('rolling update', [run(phase(200, 700, 100)), run(phase(900, 3_000, 100)), run(phase(230, 800, 120))]);
    expect(line).toContain('3 runs');
    expect(line).toContain('time to send p99 median 230 ms (min 200 ms, max 900 ms) ≤ 250 ms: MET');
    expect(line).toContain('max median 800 ms (min 700 ms, max 3,000 ms) ≤ 1,000 ms: MET');
  });

  it('and fails it when the median is over the target', () => {
    const line = repeatedChangeLine('rolling update', [run(phase(260, 700, 100)), run(phase(300, 700, 100)), run(phase(100, 700, 100))]);
    expect(line).toContain('≤ 250 ms: NOT MET');
  });

  it('sums the counts that must be 0 over the runs: a single UNKNOWN, twice or lost fails', () => {
    const line = repeatedChangeLine('rolling update', [run(phase(100, 200, 50)), run(phase(100, 200, 50, { sentTwice: 1 }))]);
    expect(line).toContain('UNKNOWN 0, sent twice 1, lost 0: NOT MET');
  });

  it('judges start-up ÷ steady on the median ratio', () => {
    expect(repeatedStartUpLine([1.5, 3.5, 1.9])).toContain('median 1.9× (min 1.5×, max 3.5×; runs 1.5×, 3.5×, 1.9×) ≤ 2×: MET');
    expect(repeatedStartUpLine([2.5, 3.5, 1.9])).toContain('≤ 2×: NOT MET');
  });

  it('says nothing for a single run (its own lines judge it)', () => {
    const one: ChangeSectionFigures = { pod: {} as ChangeSectionFigures['pod'], rollingUpdate: run(phase(100, 200, 50)) };
    expect(repeatedChangeLines([one])).toEqual([]);
    expect(repeatedChangeLines([one, one])).toHaveLength(1);
  });
});
