/**
 * Kafka's lost transaction markers in the simulation (`--lost-markers on`, issue 51): a transaction
 * its coordinator committed keeps some parts open (the ledger's always, the results' or the group
 * offset's now and then) until its producer's next marker there, which gives them its own fate —
 * what Kafka 4.3.1 did in a broker's restart (docs/operations.md). The claim after a fence keeps
 * the marks of every checkpoint whose fate the ledger cannot tell (withHangingMarks, ledger-store.ts
 * readAfterFence); before, it went on from the committed checkpoint alone and sent commands twice.
 */
import { describe, expect, it } from 'vitest';
import { runSchedule } from '../../tools/simulate/runner.ts';
import { violationsByKind } from '../helpers/simulation.ts';

// A budget of schedules, not a timing target (coverage instrumentation slows them in CI).
const SIMULATION_TIMEOUT_MS = 60_000;

const LOST_MARKERS = { variant: 'correct', ledger: 'on', lostMarkers: true } as const;

describe('lost transaction markers', { timeout: SIMULATION_TIMEOUT_MS }, () => {
  it('a claim that goes on from the committed checkpoint alone sends a command twice (the code before)', () => {
    const found = violationsByKind({ ...LOST_MARKERS, keepHanging: (committed) => committed }, 2_000);
    console.log(`lost markers, committed checkpoint alone: ${[...found].map(([kind, v]) => `${kind} ${v.schedules} (first seed ${v.firstSeed})`).join('; ')}`);
    expect(found.get('at-most-one-send')).toBeDefined();
  });

  it('a failed transaction read back below the claim’s own last checkpoint publishes again what Kafka aborted of its last commit (seed 10037 lost a result before)', () => {
    // As `npm run simulate -- --ledger on --lost-markers on` runs it: every fault of the world on.
    const everyFault = {
      ...LOST_MARKERS,
      leaseLapses: true,
      lateFences: true,
      consumerRestarts: true,
      rejoinStalls: true,
      coordinatorRestarts: true,
      crashesAfterFailure: true,
      repeatKeys: 'any',
      staleOffsets: 'ledger',
      trace: true,
    } as const;
    const { violation, trace } = runSchedule(10_037, everyFault);
    // txn#9 committed with its markers lost; txn#10 failed, and its ABORT ended txn#9's results.
    expect(trace.some((line) => line.includes('txn#10 retried (epoch 2): read back by checkpoint: lost'))).toBe(true);
    expect(trace.some((line) => line.includes('publishes again 1 outcomes of its lost txn#9'))).toBe(true);
    expect(violation).toBeUndefined();
  });

  it('the shipped claim sends no command twice; second and lost results remain (issue 51, in the report)', () => {
    const found = violationsByKind(LOST_MARKERS, 4_000);
    console.log(`lost markers, shipped: ${[...found].map(([kind, v]) => `${kind} ${v.schedules} (first seed ${v.firstSeed})`).join('; ')}`);
    expect(found.get('at-most-one-send')).toBeUndefined();
    expect(found.get('model-error')).toBeUndefined();
    expect(found.get('machine-threw')).toBeUndefined();
  });
});
