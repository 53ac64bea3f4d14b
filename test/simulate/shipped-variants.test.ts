/**
 * The shipped-lane simulation must see a bug in the shipped driver: each known-bad variant
 * (tools/simulate/shipped-variants.ts) patches a shipped class from outside, or gives the processes
 * a faulty adapter, as a careless change would, and the simulation must report the invariant it
 * breaks, with a seed. The run stops at the first schedule that breaks it; the seed it prints
 * replays with `npm run simulate:lane -- --variant <variant> --seed <seed> --schedules 1`. Every
 * invariant of table.ts's INVARIANTS is broken by one of them.
 */
import { describe, expect, it } from 'vitest';
import { runShippedLaneSchedules, type ClaimEnd, type ShippedLaneViolation } from '../../tools/simulate/shipped-lane.ts';
import { installVariant, type ShippedVariant } from '../../tools/simulate/shipped-variants.ts';
import { INVARIANTS } from '../../src/worker/protocol/table.ts';

type Kind = ShippedLaneViolation['kind'];

/**
 * Runs up to `budget` schedules from seed 1 with `variant` installed, stopping at the first that
 * breaks `kind`; `ends`: the ways claims end that the mistake needs (default: all of them).
 */
async function firstBreaking(
  variant: ShippedVariant,
  kind: Kind,
  budget: number,
  ends?: readonly Exclude<ClaimEnd, 'last'>[],
  world: { readonly retryAmbiguous?: boolean; readonly handlerCrashes?: boolean } = {},
): Promise<ShippedLaneViolation[]> {
  const { restore, faults } = installVariant(variant);
  try {
    const violations = await runShippedLaneSchedules(1, budget, { faults, stopAt: kind, ...(ends !== undefined && { ends }), ...world });
    const first = violations.find((v) => v.kind === kind);
    console.log(`${variant}: ${first === undefined ? `no ${kind} in ${budget} schedules` : `${kind} first at seed ${first.seed}: ${first.detail}`}`);
    return violations;
  } finally {
    restore();
  }
}

const kinds = (violations: readonly ShippedLaneViolation[]): Kind[] => [...new Set(violations.map((v) => v.kind))].sort();

// Budgets of schedules, not timing targets (the clock is virtual, but coverage slows the code in CI).
describe('known-bad variants of the shipped driver are caught by the shipped-lane simulation', { timeout: 240_000 }, () => {
  const cases: readonly [ShippedVariant, Kind, number, string, (readonly Exclude<ClaimEnd, 'last'>[])?][] = [
    ['send-before-mark-commits', 'call-under-committed-mark', 100, 'a sender that calls without waiting for its mark to commit'],
    ['commit-past-unfinished', 'exactly-one-result', 100, 'an offset committed past a record still in hand'],
    ['read-ledger-before-fence', 'exactly-one-result', 300, 'a claim that reads the ledger before it fences'],
    ['keep-without-checks', 'keep-only-unfenced', 600, 'ownership that keeps a claim without checking its generation or lease'],
    // Its claims under way when its consumer crashes go on, out of the group: consumers that crash or stall.
    ['current-out-of-group', 'at-most-one-send', 1_200, 'a process whose consumer crashed that goes on as a member', ['dropped', 'reclaim', 'stall']],
    ['lost-until-next-generation', 'exactly-one-result', 600, 'a partition lost to fencing that is not claimed again on heartbeats'],
    // A transaction that fails while the group rebalances, or once its process is out of the group.
    [
      'reinitialise-anytime',
      'at-most-one-send',
      // First at seed 1,022 since a claim's own read of the group offset is stale now and then (within 600 before).
      1_500,
      'a failed transaction’s producer initialised again while the group rebalances, or out of it',
      ['coordinator', 'keep', 'away', 'dropped'],
    ],
    ['handover-withdraws-calls', 'at-most-one-send', 300, 'a claim that hands over its calls under way as withdrawn'],
    ['handover-by-offset', 'at-most-one-send', 300, 'a handover matched by its record alone, not the mark it names'],
    ['refence-after-fenced', 'exactly-one-result', 300, 'a fenced producer that takes itself back'],
    ['resend-when-unread', 'exactly-one-result', 800, 'a failed read-back taken for "not committed"'],
    ['resend-ahead-unread', 'exactly-one-result', 300, 'a failed transaction that published ahead of the offset sent again without reading back'],
    // A lost commit answer of a transaction that moved the offset, then a stale read of it: rare.
    ['read-back-by-offset', 'exactly-one-result', 1_200, 'a failed transaction read back by the group offset (stale without KIP-447), not the ledger'],
    ['mark-without-permit', 'unknown-is-bounded', 300, 'marks taken outside the process’s mark permits'],
    // A repeat ahead of its command's record under another key, that record's mark in doubt when its owner dies: rare.
    ['repeat-before-untaken-carrier', 'repeat-after-result', 600, 'a repeat’s carrier not taken yet taken for answered'],
    ['marks-ahead-fixed', 'unknown-is-bounded', 300, 'mark permits a fixed pool of twice the slots, not the free slots plus the marks ahead'],
    ['spend-cap-ignored', 'within-spend-cap', 300, 'spend holds that let every send through'],
    ['refuse-call-dropped', 'no-driver-error', 100, 'a lane that drops the machine’s refuse-call'],
    ['refuse-call-called', 'at-most-one-send', 100, 'a lane that carries out refuse-call as a call'],
    ['handover-dropped', 'unknown-has-a-cause', 300, 'a lane that drops its handovers'],
    ['keys-in-parallel', 'key-order', 100, 'a record book that queues each record under a key of its own'],
    ['velocity-ignored', 'within-velocity-limits', 100, 'velocity guards that refuse nothing'],
    ['heartbeats-withheld', 'heartbeats-within-session', 300, 'a router whose batches never heartbeat while a claim waits'],
    ['ambiguous-as-failed', 'result-tells-the-truth', 100, 'a failure that may hide a send taken for one that surely did not'],
    // Inside the machine: its own assertion (calls-under-committed-marks) fails the claim, and the lane's error line is reported.
    ['mark-trusted-at-permit', 'no-driver-error', 50, 'a mark taken for committed as soon as its permit is granted'],
  ];
  const ownWorld: readonly [ShippedVariant, Kind][] = [
    ['ambiguous-kept-forgotten', 'at-most-one-send'],
    ['crash-withdraws-mark', 'at-most-one-send'],
  ];

  it('has a variant that breaks each invariant the simulation checks (table.ts INVARIANTS)', () => {
    const broken = new Set([...cases, ...ownWorld].map(([, kind]) => kind));
    expect([...broken].sort()).toEqual(Object.keys(INVARIANTS).sort());
  });

  for (const [variant, kind, budget, what, ends] of cases)
    it(`${variant} (${what}): ${kind}`, async () => {
      expect(kinds(await firstBreaking(variant, kind, budget, ends))).toContain(kind);
    });

  // Every schedule under PROVIDER_RETRY_AMBIGUOUS: a command kept after an answer that may hide a
  // send must keep its mark, or a claim that ends before the next call lets another owner send it.
  it('ambiguous-kept-forgotten (a mark withdrawn when an ambiguous call is kept for another): at-most-one-send', async () => {
    expect(kinds(await firstBreaking('ambiguous-kept-forgotten', 'at-most-one-send', 800, undefined, { retryAmbiguous: true }))).toContain('at-most-one-send');
  });

  // Every schedule with record handlers that throw now and then: one that threw after its call
  // must keep the command's mark, or the next claim sends it again.
  it('crash-withdraws-mark (a record whose handler threw given up as never sent): at-most-one-send', async () => {
    expect(kinds(await firstBreaking('crash-withdraws-mark', 'at-most-one-send', 300, undefined, { handlerCrashes: true }))).toContain('at-most-one-send');
  });

  it('a schedule that broke something replays from its seed alone, interleaving included (the clock is virtual)', async () => {
    const { restore, faults } = installVariant('refuse-call-called');
    try {
      const batch = await runShippedLaneSchedules(1, 100, { faults, stopAt: 'at-most-one-send' });
      const seed = batch.find((v) => v.kind === 'at-most-one-send')?.seed;
      expect(seed).toBeDefined();
      const details = (violations: readonly ShippedLaneViolation[]): string[] => violations.filter((v) => v.seed === seed).map((v) => `${v.kind}: ${v.detail}`);
      const alone = await runShippedLaneSchedules(seed ?? 0, 1, { faults });
      expect(details(alone)).toEqual(details(batch));
      expect(alone[0]?.trace).toEqual(batch.find((v) => v.seed === seed)?.trace);
    } finally {
      restore();
    }
  });
});

/**
 * With lost markers (a commit's marker to the ledger partition lost, as Kafka 4.3.1 did in a
 * broker's restart): no command is answered twice, nor sent twice. What the shipped code still
 * does is write an undecodable record's dead letter again when a lost transaction had written it
 * (docs/guarantees.md). Each variant drops one of what prevents the rest: the read-back by the
 * results, the result search, the `answered` marks, the `uncalled` ones.
 */
describe('lost markers: no command answered twice', { timeout: 240_000 }, () => {
  const answeredTwice = (v: ShippedLaneViolation): boolean => v.kind === 'exactly-one-result' && /: \d+ results \(/.test(v.detail);

  it('the shipped code: none in 300 schedules, nor a second send', async () => {
    const violations = await runShippedLaneSchedules(1, 300, { lostMarkers: true });
    expect(
      violations.filter((v) => v.kind !== 'exactly-one-result' || !/ has \d+ dead letters/.test(v.detail)).map((v) => `${v.seed} ${v.kind} ${v.detail}`),
    ).toEqual([]);
  });

  const cases: readonly [ShippedVariant, number, string][] = [
    ['no-result-search', 100, 'no search of the result topic for in-doubt marks'],
    ['fate-never-told', 100, 'a failed commit read back by the ledger alone'],
    ['answered-unflagged', 100, 'marks a lost transaction answered kept as any other'],
    ['uncalled-dropped', 100, 'records a lost transaction answered without a call handled again'],
  ];
  for (const [variant, budget, what] of cases)
    it(`${variant} (${what}): answers a command twice`, async () => {
      const { restore, faults } = installVariant(variant);
      try {
        const violations = await runShippedLaneSchedules(1, budget, { lostMarkers: true, faults, stopWhen: answeredTwice });
        const first = violations.find(answeredTwice);
        console.log(`${variant}: ${first === undefined ? `none in ${budget} schedules` : `first at seed ${first.seed}: ${first.detail}`}`);
        expect(first).toBeDefined();
      } finally {
        restore();
      }
    });
});
