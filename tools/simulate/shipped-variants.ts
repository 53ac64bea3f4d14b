import { CLAIM_STEPS } from '../../src/worker/protocol/table.ts';
import { SpendHolds } from '../../src/worker/guard/spend-holds.ts';
import { VelocityGuard } from '../../src/worker/guard/velocity.ts';
import { ProviderError } from '../../src/provider/provider-error.ts';
import { GuardedSender } from '../../src/worker/send/guarded-sender.ts';
import { HandoverLookout } from '../../src/worker/ownership/handover-lookout.ts';
import { LaneRouter } from '../../src/worker/ownership/lane-router.ts';
import type { Handover } from '../../src/worker/ownership/handover-record.ts';
import type { OpenMark } from '../../src/worker/lane/ledger-checkpoint.ts';
import { OwnershipMachine } from '../../src/worker/protocol/ownership.ts';
import { PartitionMachine, type Effect } from '../../src/worker/protocol/partition-machine.ts';
import { RecordBook, type RecordEntry } from '../../src/worker/protocol/record-book.ts';
import { RECORD_MOVES } from '../../src/worker/protocol/table.ts';
import { SendPath } from '../../src/worker/protocol/send-path.ts';
import type { SendHooks } from '../../src/worker/send/send-outcome.ts';
import type { CommandSender } from '../../src/worker/send/failover-sender.ts';

/**
 * Known-bad variants of the worker, made on the shipped classes the shipped-lane simulation runs:
 * each is a mistake a change to `src/` could make, injected from outside (a method of a shipped
 * class replaced for the run, the claim steps reordered, the transition table let through, the
 * machine's effects rewritten on their way to the lane, or a faulty adapter the processes are
 * given: DriverFaults), so that no file of `src/` branches on a mutant. `installVariant` patches,
 * and returns what undoes it. The simulation must report each with a seed
 * (test/simulate/shipped-variants.test.ts); the names of the retired model simulation's variants
 * where the mistake is the same (docs/partition-protocol.md).
 */
export const SHIPPED_VARIANTS = [
  'correct',
  'send-before-mark-commits',
  'commit-past-unfinished',
  'repeat-before-untaken-carrier',
  'read-ledger-before-fence',
  'keep-without-checks',
  'current-out-of-group',
  'lost-until-next-generation',
  'reinitialise-anytime',
  'handover-withdraws-calls',
  'handover-by-offset',
  'refence-after-fenced',
  'resend-when-unread',
  'resend-ahead-unread',
  'read-back-by-offset',
  'mark-without-permit',
  'marks-ahead-fixed',
  'spend-cap-ignored',
  'velocity-ignored',
  'heartbeats-withheld',
  'ambiguous-as-failed',
  'refuse-call-dropped',
  'refuse-call-called',
  'handover-dropped',
  'no-result-search',
  'fate-never-told',
  'answered-unflagged',
  'uncalled-dropped',
  'keys-in-parallel',
  'ambiguous-kept-forgotten',
  'crash-withdraws-mark',
  'mark-trusted-at-permit',
] as const;

export type ShippedVariant = (typeof SHIPPED_VARIANTS)[number];

/** What the simulation injects into the shipped driver, from outside it (for the tests that prove the checks see a driver bug). */
export interface DriverFaults {
  /** Wraps the sender the record handler is given. */
  readonly sender?: (sender: CommandSender) => CommandSender;
  /** A faulty producer adapter: fenced, it initialises again (fencing back whoever fenced it) and goes on, at most 3 times. */
  readonly fencedProducerRetakes?: boolean;
  /** A faulty permits adapter: the lanes' mark permits granted at once, outside the process's pool (mark-without-permit). */
  readonly unpooledMarks?: boolean;
  /**
   * A faulty permits adapter: the lanes' mark permits a fixed pool of twice the slots (the design
   * before mark permits followed the free slots), not the free slots plus the marks ahead (marks-ahead-fixed).
   */
  readonly fixedMarkPool?: boolean;
  /** A faulty ledger reader for a failed transaction's read-back: a read that fails (1 in 5) answers with what it had read before (the checkpoint before the newest). */
  readonly readBackSwallowsFailures?: boolean;
  /** Handovers without the result search (no-result-search): an in-doubt mark with no handover is UNKNOWN, its result in the result topic or not. */
  readonly noResultSearch?: boolean;
  /** A reader that never tells what became of a batch a transaction wrote (fate-never-told): a failed commit's read-back trusts the ledger alone. */
  readonly fateNeverTold?: boolean;
  /** A settle after the fence that drops the marks' `answered` (answered-unflagged): the next claim takes a handover before it looks for the result. */
  readonly answeredUnflagged?: boolean;
  /** A settle after the fence that keeps only marks (uncalled-dropped): a record a lost transaction answered without a call is handled again. */
  readonly uncalledDropped?: boolean;
}

type Restore = () => void;

/** Replaces property `name` of `target` with `descriptor` for the run; returns what puts it back. */
export function replaceProperty(target: object, name: PropertyKey, descriptor: PropertyDescriptor): Restore {
  const own = Object.getOwnPropertyDescriptor(target, name);
  Object.defineProperty(target, name, { configurable: true, ...descriptor });
  return () => {
    if (own === undefined) delete (target as Record<PropertyKey, unknown>)[name];
    else Object.defineProperty(target, name, own);
  };
}

/** Replaces `name` of `target` (a prototype, or one object) with what `make` builds from the original; returns the undo. */
function patch<T extends object, K extends keyof T>(target: T, name: K, make: (original: T[K]) => T[K]): Restore {
  return replaceProperty(target, name, { value: make(target[name]), writable: true });
}

/** Replaces the getter `name` of `target` (a prototype) for the run. */
function patchGetter<T extends object>(target: T, name: keyof T & string, get: () => unknown): Restore {
  return replaceProperty(target, name, { get });
}

/** Every GuardedSender is given the lane's send hooks as `rewrite` turns them (a bug in how the sender uses them). */
function sendHooksRewritten(rewrite: (hooks: SendHooks) => SendHooks): Restore {
  return patch(
    GuardedSender.prototype,
    'send',
    (send) =>
      function (this: GuardedSender, request, correlationId, signal, expiresAt, hooks, footprint) {
        return send.call(this, request, correlationId, signal, expiresAt, hooks && rewrite(hooks), footprint);
      },
  );
}

/** The lane carries out the machine's effects as `rewrite` turns them (a bug in the effect interpreter). */
function rewriteEffects(rewrite: (effects: Effect<unknown>[], machine: PartitionMachine<unknown>) => Effect<unknown>[]): Restore {
  return patch(
    PartitionMachine.prototype,
    'drain',
    (drain) =>
      function (this: PartitionMachine<unknown>) {
        return rewrite(drain.call(this), this);
      },
  );
}

/** A transition table that lets every move pass: a variant's wrong rule may take a record where the table says it cannot go. */
function anyMove(): Restore {
  return patch(RECORD_MOVES, 'has', () => () => true);
}

/**
 * Patches the shipped classes as `variant` says; returns what restores them, and the faulty
 * adapters the simulation must give the processes (a variant that is a wrong adapter, not a wrong class).
 */
export function installVariant(variant: ShippedVariant): { readonly restore: Restore; readonly faults: DriverFaults } {
  const undo: Restore[] = [];
  let faults: DriverFaults = {};
  const restore = (): void => {
    for (const u of undo.reverse()) u();
  };
  switch (variant) {
    case 'correct':
      break;
    case 'send-before-mark-commits':
      // The call goes ahead as soon as its mark is asked for, before the mark's transaction commits.
      undo.push(
        sendHooksRewritten((hooks) => ({
          ...hooks,
          beforeSend: async (s, account) => {
            void hooks.beforeSend?.(s, account);
            return true;
          },
        })),
      );
      break;
    case 'mark-trusted-at-permit':
      // Inside the machine: a mark taken for committed as soon as its permit is granted (its
      // transaction not even begun), so the record goes on to its slot and calls. The machine's own
      // check (calls-under-committed-marks) must catch it: the lane reports it at error level.
      undo.push(
        patch(
          SendPath.prototype as unknown as { permitGranted: (offset: bigint, at: number, clock: number) => void },
          'permitGranted',
          (permitGranted) =>
            function (this: SendPath<unknown>, offset: bigint, at: number, clock: number) {
              permitGranted.call(this, offset, at, clock);
              this.marksCommitted([offset]);
            },
        ),
      );
      break;
    case 'commit-past-unfinished':
      // The offset passes every finished record, past unfinished ones too.
      undo.push(
        anyMove(),
        patch(
          RecordBook.prototype as unknown as { finishedPrefix: () => RecordEntry<unknown>[] },
          'finishedPrefix',
          () =>
            function (this: RecordBook<unknown>) {
              return this.inState('done', 'published');
            },
        ),
      );
      break;
    case 'ambiguous-kept-forgotten':
      // A command kept for a later call after an answer that may hide a send (PROVIDER_RETRY_AMBIGUOUS)
      // has its mark withdrawn, as if nothing had reached the service: the fault of the handler
      // the model simulation called forgetful (guarded-sender.ts before its fix).
      undo.push(sendHooksRewritten((hooks) => ({ ...hooks, kept: () => hooks.kept?.(false) })));
      break;
    case 'crash-withdraws-mark':
      // A record whose handler threw is given up as never sent: its mark is withdrawn, although the
      // call may have been made before the throw (run with Schedule.handlerCrashes).
      undo.push(
        patch(
          PartitionMachine.prototype,
          'crashed',
          () =>
            function (this: PartitionMachine<unknown>, offset: bigint, error: unknown) {
              this.abandoned(offset, false, performance.now());
              this.fail(error);
            },
        ),
      );
      break;
    case 'keys-in-parallel':
      // The record book queues each record under a key of its own: records of one key go in parallel.
      undo.push(
        patch(
          RecordBook.prototype as unknown as { add: (offset: bigint, key: string) => RecordEntry<unknown> },
          'add',
          (add) =>
            function (this: RecordBook<unknown>, offset: bigint, key: string) {
              return add.call(this, offset, `${key}#${offset}`);
            },
        ),
      );
      break;
    case 'repeat-before-untaken-carrier': {
      // A repeat's carrier the claim has not taken (an earlier owner's mark in doubt, after it) is
      // taken for answered, and the run-ahead bound is kept while such a carrier waits to be taken.
      const book = RecordBook.prototype as unknown as {
        carrierCommitted: (carrier: bigint) => boolean;
        untakenCarrier: () => bigint;
        has: (offset: bigint) => boolean;
      };
      undo.push(
        patch(
          book,
          'carrierCommitted',
          (carrierCommitted) =>
            function (this: typeof book, carrier: bigint) {
              return !this.has(carrier) || carrierCommitted.call(this, carrier);
            },
        ),
        patch(book, 'untakenCarrier', () => () => -1n),
      );
      break;
    }
    case 'read-ledger-before-fence': {
      // The claim reads the ledger, then fences: what an earlier owner commits between is missed.
      const steps = CLAIM_STEPS as unknown as string[];
      const before = [...steps];
      steps.splice(0, steps.length, 'handover', 'read', 'fence');
      undo.push(() => void steps.splice(0, steps.length, ...before));
      break;
    }
    case 'keep-without-checks':
      // Every held claim of a partition assigned again is kept (no missed generation, lapse, loss checked).
      undo.push(
        patch(
          OwnershipMachine.prototype,
          'join',
          (join) =>
            function (this: OwnershipMachine, partitions, next, holding) {
              const decided = join.call(this, partitions, next, holding);
              return { ...decided, keepable: holding.filter((claim) => partitions.includes(claim.partition)) };
            },
        ),
      );
      break;
    case 'current-out-of-group':
      // A process whose consumer crashed goes on as a member: its claims current, and fencing.
      undo.push(
        patch(
          OwnershipMachine.prototype,
          'isCurrent',
          (isCurrent) =>
            function (this: OwnershipMachine, generation: number, partition: number) {
              if (this.state === 'out-of-group') return generation === this.generation && !this.isLost(partition);
              return isCurrent.call(this, generation, partition);
            },
        ),
        patch(
          OwnershipMachine.prototype,
          'mayFence',
          (mayFence) =>
            function (this: OwnershipMachine, generation: number) {
              if (this.state === 'out-of-group') return generation === this.generation && !this.isStopping;
              return mayFence.call(this, generation);
            },
        ),
      );
      break;
    case 'lost-until-next-generation':
      // A partition lost to fencing is never claimed again on heartbeats: it waits for the next generation.
      undo.push(
        patch(
          OwnershipMachine.prototype,
          'heartbeat',
          (heartbeat) =>
            function (this: OwnershipMachine) {
              heartbeat.call(this);
              return [];
            },
        ),
      );
      break;
    case 'reinitialise-anytime':
      // A failed transaction's producer is initialised again by the lease and the generation alone:
      // while the group rebalances, or out of the group, it fences the member given the partition.
      undo.push(
        patch(
          OwnershipMachine.prototype,
          'mayReinitialise',
          () =>
            function (this: OwnershipMachine, generation: number, partition: number) {
              return this.leaseHolds() && generation === this.generation && !this.isLost(partition);
            },
        ),
      );
      break;
    case 'handover-withdraws-calls': {
      // When the claim stops working the partition (retiring or failed), the marks of its calls
      // under way are handed over as withdrawn (never sent), as if those calls could not have gone out.
      const working = new WeakMap<PartitionMachine<unknown>, boolean>();
      undo.push(
        rewriteEffects((effects, machine) => {
          const was = working.get(machine) ?? true;
          const is = machine.state === 'active' || machine.state === 'holding';
          working.set(machine, is);
          if (!was || is) return effects;
          const calling: Effect<unknown>[] = [];
          for (const [offset, mark] of machine.claim.open)
            if (machine.recordState(offset) === 'calling') calling.push({ type: 'handover', offset, mark, outcome: undefined });
          return [...effects, ...calling];
        }),
      );
      break;
    }
    case 'handover-by-offset':
      // A handover is matched by the record alone: an earlier claim's settlement of the same offset
      // (a withdrawal, before this mark's call) is taken for what became of this claim's mark.
      undo.push(
        patch(
          HandoverLookout.prototype as unknown as { settles: (handover: Handover, marks: ReadonlyMap<string, OpenMark>) => string | undefined },
          'settles',
          () => (handover, marks) => [...marks].find(([, mark]) => mark.offset === handover.offset)?.[0],
        ),
      );
      break;
    case 'refence-after-fenced':
      // A fenced producer takes itself back (fencing whoever fenced it) and commits its stale state.
      faults = { fencedProducerRetakes: true };
      break;
    case 'resend-ahead-unread':
      // A failed transaction that published results ahead of the offset (and did not move it) is
      // taken for not committed without reading anything back: sent again.
      undo.push(
        rewriteEffects((effects) =>
          effects.map((e) => (e.type === 'transaction' && e.plan.commitOffset === undefined ? { ...e, plan: { ...e.plan, readBack: { by: 'nothing' } } } : e)),
        ),
      );
      break;
    case 'read-back-by-offset':
      // A failed transaction that moved the offset is read back by the group's offset (which an
      // admin read may have stale without KIP-447), not by the ledger's checkpoint. (With a reader
      // that cannot tell its batches' fate either, as resend-when-unread.)
      faults = { fateNeverTold: true };
      undo.push(
        rewriteEffects((effects) =>
          effects.map((e) =>
            e.type === 'transaction' && e.plan.commitOffset !== undefined
              ? { ...e, plan: { ...e.plan, readBack: { by: 'offset', offset: e.plan.commitOffset } } }
              : e,
          ),
        ),
      );
      break;
    case 'no-result-search':
      // A new claim that reports UNKNOWN every in-doubt mark with no handover, although the result
      // topic holds its result (a transaction whose ledger marker Kafka lost): a second result.
      faults = { noResultSearch: true };
      break;
    case 'fate-never-told':
      // A failed commit whose ledger marker Kafka lost is read back by the ledger alone: sent again,
      // though readers see its results (partition-transaction.ts, seenByReaders).
      faults = { fateNeverTold: true };
      break;
    case 'answered-unflagged':
      // The marks a lost transaction answered are kept without `answered`: the next claim takes the
      // earlier owner's handover (its result) though the result topic has it already.
      faults = { answeredUnflagged: true };
      break;
    case 'uncalled-dropped':
      // The records a lost transaction answered without a call are not kept: the next claim handles
      // them again (a second REJECTED, or worse, a send after a REJECTED result).
      faults = { uncalledDropped: true };
      break;
    case 'mark-without-permit':
      // Every record is marked as soon as it is taken, however many wait for a slot: a death leaves them all UNKNOWN.
      faults = { unpooledMarks: true };
      break;
    case 'marks-ahead-fixed':
      // Twice the slots may wait marked whatever the slots need: a death with the slots busy leaves them all UNKNOWN.
      faults = { fixedMarkPool: true };
      break;
    case 'spend-cap-ignored':
      // The spend holds let every send through: the cap never holds one.
      undo.push(patch(SpendHolds.prototype, 'take', () => async () => 0n));
      break;
    case 'velocity-ignored':
      // The velocity guards refuse nothing: every destination passes whatever its counts.
      undo.push(patch(VelocityGuard.prototype, 'screen', () => (destinations) => destinations.map(() => undefined)));
      break;
    case 'heartbeats-withheld':
      // The router's batches never heartbeat: a claim that waits (a hanging transaction's read) holds
      // the member's heartbeats with it, past its session.
      undo.push(
        patch(
          LaneRouter.prototype,
          'accept',
          (accept) =>
            function (this: LaneRouter, batch) {
              return accept.call(this, { ...batch, heartbeat: async () => undefined });
            },
        ),
      );
      break;
    case 'ambiguous-as-failed':
      // A failure whose request may have reached the service (a timeout after it went out, a
      // reset, a 5xx) is taken for one that surely did not: FAILED, and a failover may send again.
      undo.push(patchGetter(ProviderError.prototype, 'ambiguous', () => false));
      break;
    case 'resend-when-unread':
      // A read-back that failed is taken for "not committed": the failed transaction is sent again.
      // With a reader that cannot tell the fate of its batches either: a failed transaction whose
      // results readers see is taken for committed whatever the ledger says (seenByReaders), which
      // would hide the ledger's read-back behind it.
      faults = { readBackSwallowsFailures: true, fateNeverTold: true };
      break;
    case 'refuse-call-dropped':
      // The lane drops the machine's refuse-call: the record waits for an answer that never comes.
      undo.push(rewriteEffects((effects) => effects.filter((effect) => effect.type !== 'refuse-call')));
      break;
    case 'refuse-call-called':
      // The lane carries out refuse-call as call: a zombie calls after its lease lapsed.
      undo.push(rewriteEffects((effects) => effects.map((effect) => (effect.type === 'refuse-call' ? { type: 'call', offset: effect.offset } : effect))));
      break;
    case 'handover-dropped':
      // The lane drops its handovers: a claim that moves tells the next owner nothing.
      undo.push(rewriteEffects((effects) => effects.filter((effect) => effect.type !== 'handover')));
      break;
  }
  return { restore, faults };
}
