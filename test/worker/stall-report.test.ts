import { describe, expect, it } from 'vitest';
import { StallReport } from '../../src/worker/stall-report.ts';

describe('StallReport: when a waiting partition gets a log line', () => {
  it('at a second without progress, then each time the wait doubles', () => {
    const report = new StallReport();
    const at = (ms: number) => report.due([{ lane: 't:0', ms }]).map((d) => d.ms);
    expect(at(250)).toEqual([]);
    expect(at(1_000)).toEqual([1_000]);
    expect(at(1_750)).toEqual([]);
    expect(at(2_000)).toEqual([2_000]);
    expect(at(3_900)).toEqual([]);
    expect(at(4_100)).toEqual([4_100]);
    // A check that came late (a busy event loop): one line, and the next at the following doubling.
    expect(at(17_000)).toEqual([17_000]);
    expect(at(31_000)).toEqual([]);
    expect(at(32_000)).toEqual([32_000]);
  });

  it('starts afresh after progress, and forgets a partition no longer busy', () => {
    const report = new StallReport();
    expect(report.due([{ lane: 't:0', ms: 2_500 }])).toEqual([{ lane: 't:0', ms: 2_500 }]);
    // Progress meanwhile: the wait is shorter than the last one seen.
    expect(report.due([{ lane: 't:0', ms: 300 }])).toEqual([]);
    expect(report.due([{ lane: 't:0', ms: 1_200 }])).toEqual([{ lane: 't:0', ms: 1_200 }]);
    // Not busy any more, then busy and waiting again: counted from the first second again.
    expect(report.due([])).toEqual([]);
    expect(report.due([{ lane: 't:0', ms: 1_100 }])).toEqual([{ lane: 't:0', ms: 1_100 }]);
  });

  it('keeps each partition’s count apart', () => {
    const report = new StallReport();
    expect(
      report
        .due([
          { lane: 't:0', ms: 1_000 },
          { lane: 't:1', ms: 500 },
        ])
        .map((d) => d.lane),
    ).toEqual(['t:0']);
    expect(
      report
        .due([
          { lane: 't:0', ms: 1_500 },
          { lane: 't:1', ms: 1_000 },
        ])
        .map((d) => d.lane),
    ).toEqual(['t:1']);
  });
});
