import { describe, expect, it } from 'vitest';
import { openLoopFigures } from '../../bench/lib/open-loop.ts';
import type { OpenLoopObservations, OpenLoopOptions } from '../../bench/lib/open-loop.ts';

const options: OpenLoopOptions = {
  latency: { kind: 'fixed', ms: 50 },
  inFlight: 64,
  ratePerSecond: 2,
  seconds: 2,
  warmupSeconds: 2,
  seed: 1,
  meanLatencyMs: 50,
  ledger: true,
};

/** Commands published at `at` (ms) and first requested `toSend` ms later; the measured window starts 2 s after the first. */
function observations(commands: readonly (readonly [string, number, number])[]): OpenLoopObservations {
  const machine = { busyShare: 0.5, cores: 2 };
  return {
    publishedAt: new Map(commands.map(([id, at]) => [id, at])),
    kinds: new Map(commands.map(([id]) => [id, 'voice'])),
    requests: [],
    firstRequest: new Map(commands.map(([id, at, toSend]) => [id, at + toSend])),
    firstVisible: new Map(),
    results: undefined,
    resultCount: commands.length,
    measureFrom: 12_000,
    missingResults: 0,
    peakRssBytes: 0,
    logGaps: 0,
    workerLoad: { transactionsPerSecond: 0, cpuShare: 0, stages: { mark: { count: 2, meanMs: 10, p99AtMostMs: 25 } }, machine },
    warmupMachine: machine,
    warmupStages: { mark: { count: 3, meanMs: 40, p99AtMostMs: 100 } },
  };
}

describe('openLoopFigures', () => {
  it("splits the warm-up's time to send by the second each command was published in, and keeps each window's stages", () => {
    const figures = openLoopFigures(
      observations([
        ['w1', 10_000, 140],
        ['w2', 10_600, 20],
        ['w3', 11_100, 30],
        ['m1', 12_000, 10],
        ['m2', 13_500, 12],
      ]),
      options,
    );
    expect(figures.warmup?.p99BySecondMs).toEqual([140, 30]);
    expect(figures.warmup?.timeToSendP99Ms).toBe(140);
    expect(figures.warmup?.stages).toEqual({ mark: { count: 3, meanMs: 40, p99AtMostMs: 100 } });
    expect(figures.timeToSendP99Ms).toBe(12);
    expect(figures.stages).toEqual({ mark: { count: 2, meanMs: 10, p99AtMostMs: 25 } });
  });
});
