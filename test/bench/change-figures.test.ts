import { describe, expect, it } from 'vitest';
import { changeTargetsMet, phaseFigures, rateFigures, type ChangeObservations } from '../../bench/lib/change-figures.ts';
import { longestGap } from '../../bench/lib/stats.ts';

describe('longestGap', () => {
  it('is the longest gap between requests inside the window, its edges included', () => {
    expect(longestGap([100, 150, 700, 800], 0, 1000)).toBe(550);
    // From the window's start to the first request, and from the last to its end.
    expect(longestGap([900], 0, 1000)).toBe(900);
    expect(longestGap([100], 0, 1000)).toBe(900);
  });

  it('ignores requests outside the window and is the whole window without any', () => {
    expect(longestGap([10, 2000], 100, 1100)).toBe(1000);
    expect(longestGap([], 100, 600)).toBe(500);
    expect(longestGap([50, 400, 450, 1200], 300, 1000)).toBe(550);
  });
});

describe('phaseFigures', () => {
  const observations: ChangeObservations = {
    publishedAt: new Map([
      ['a', 1000],
      ['b', 1100],
      ['c', 1200],
      ['d', 1300],
      ['e', 5000],
    ]),
    firstRequest: new Map([
      ['a', 1050],
      ['b', 1400],
      ['d', 1320],
      ['e', 5010],
    ]),
    requestTimes: [1050, 1320, 1400, 1400, 5010],
    outcomes: new Map([
      ['a', ['SENT']],
      ['b', ['UNKNOWN']],
      ['c', ['REJECTED']],
      ['e', ['SENT']],
    ]),
    sentTwice: new Set(['b', 'e']),
  };

  it('counts the commands published in [from, to): time to send, UNKNOWN, sent twice, lost', () => {
    const p = phaseFigures(observations, 1000, 2000);
    expect(p).toMatchObject({ published: 4, sent: 3, timeToSendP50Ms: 50, timeToSendP99Ms: 300, timeToSendMaxMs: 300, unknown: 1, sentTwice: 1, lost: 1 });
    // c never reached the service (rejected before a send): no time to send, not lost.
    expect(p.longestSilenceMs).toBe(600);
    expect(changeTargetsMet(p)).toBe(false);
  });

  it('meets the targets with every command sent once, quickly, and a result each', () => {
    const p = phaseFigures(observations, 4000, 5500);
    expect(p).toMatchObject({ published: 1, unknown: 0, sentTwice: 1, lost: 0 });
    expect(changeTargetsMet({ ...p, sentTwice: 0, longestSilenceMs: 990 })).toBe(true);
    expect(changeTargetsMet({ ...p, sentTwice: 0, longestSilenceMs: 1001 })).toBe(false);
  });
});

describe('rateFigures', () => {
  it('buckets requests by whole second of the window, a partial last second left out', () => {
    const times = [0, 10, 999, 1000, 1500, 2999, 3100];
    const r = rateFigures(times, 0, 3500, 3);
    expect(r.perSecond).toEqual([3, 2, 1]);
    expect(r.meanPerSecond).toBe(2);
    expect(r.maxPerSecond).toBe(3);
  });
});

describe('changeTargetsMet with a binding rate limit', () => {
  const calm = {
    from: 0,
    to: 1000,
    published: 10,
    sent: 10,
    timeToSendP50Ms: 9000,
    timeToSendP99Ms: 9000,
    timeToSendMaxMs: 9000,
    longestSilenceMs: 100,
    unknown: 0,
    sentTwice: 0,
    lost: 0,
  };
  it('judges the rate instead of the time to send, which measures the queue', () => {
    expect(changeTargetsMet(calm)).toBe(false);
    expect(changeTargetsMet(calm, rateFigures([0, 100, 200, 1000, 1100, 1900], 0, 2000, 3))).toBe(true);
    expect(changeTargetsMet(calm, rateFigures([0, 100, 1000], 0, 2000, 3))).toBe(false);
  });
});
