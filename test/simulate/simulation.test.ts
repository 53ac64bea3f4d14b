import { describe, expect, it } from 'vitest';
import { CLAIM_TRANSITIONS, RECORD_TRANSITIONS } from '../../src/worker/protocol/table.ts';
import type { RunOptions } from '../../tools/simulate/model.ts';
import { runMany, runSchedule } from '../../tools/simulate/runner.ts';

/**
 * The correct protocol with every fault of the model on: lapsing leases, handlers that throw after
 * their claim failed, and commandIds repeated under other keys too (the problems the simulation
 * found in these are fixed; test/simulate/findings.test.ts pins each one).
 */
const CORRECT: RunOptions = { variant: 'correct', ledger: 'both', leaseLapses: true, crashesAfterFailure: true, repeatKeys: 'any' };

function violations(summary: ReturnType<typeof runMany>): string[] {
  return summary.violations.map((r) => `seed ${r.seed}: ${r.violation?.kind}: ${r.violation?.message}`);
}

// A budget of schedules, not a timing target: with coverage on and the machine shared (CI runs the
// unit tests with instrumentation), 10,000 schedules took over vitest's 5 s default once.
const SIMULATION_TIMEOUT_MS = 60_000;

describe('the simulated partition protocol', { timeout: SIMULATION_TIMEOUT_MS }, () => {
  it.each(['on', 'off'] as const)('keeps every invariant over 10,000 schedules with the ledger %s', (ledger) => {
    const summary = runMany(10_000, 1, { ...CORRECT, ledger }, false);
    expect(violations(summary)).toEqual([]);
    expect(summary.violationCount).toBe(0);
    expect(summary.schedules).toBe(10_000);
  });

  it('exercises every transition of the record and claim tables', () => {
    const summary = runMany(6_000, 50_000, { ...CORRECT, coverage: true }, false);
    expect(violations(summary)).toEqual([]);
    const coverage = summary.coverage;
    if (coverage === undefined) throw new Error('no coverage collected');
    // Every move the driver inferred is one the table lists (else the inference, or the machine, is wrong).
    expect([...coverage.unexpected]).toEqual([]);
    expect(coverage.missing()).toEqual({ records: [], claims: [] });
    expect(coverage.records.size).toBe(RECORD_TRANSITIONS.length);
    expect(coverage.claims.size).toBe(CLAIM_TRANSITIONS.length);
  });

  it('replays a seed exactly: the same trace twice, and the same outcome with or without one', () => {
    for (const seed of [7, 151, 4_242]) {
      const first = runSchedule(seed, { ...CORRECT, trace: true });
      const second = runSchedule(seed, { ...CORRECT, trace: true });
      const untraced = runSchedule(seed, CORRECT);
      expect(first.trace.length).toBeGreaterThan(20);
      expect(second.trace).toEqual(first.trace);
      expect(untraced.events).toBe(first.events);
      expect(untraced.requests).toBe(first.requests);
      expect(untraced.violation).toEqual(first.violation);
    }
    // A violating schedule replays too: the same trace, up to the same violation.
    const variant = { ...CORRECT, variant: 'send-before-mark-commits', ledger: 'on' } as const;
    let seed = 1;
    while (runSchedule(seed, variant).violation === undefined && seed < 300) seed += 1;
    const bad = runSchedule(seed, { ...variant, trace: true });
    expect(bad.violation?.kind).toBe('at-most-one-send');
    expect(runSchedule(seed, { ...variant, trace: true }).trace).toEqual(bad.trace);
  });

  it('draws different worlds from different seeds (one and two partitions, two and three processes, both ledger modes)', () => {
    const seen = new Set<string>();
    for (let seed = 1; seed <= 200; seed++) {
      const { settings } = runSchedule(seed, CORRECT);
      seen.add(`${settings.partitions}/${settings.processes}/${settings.ledger}`);
    }
    expect(seen.size).toBe(8);
  });
});
