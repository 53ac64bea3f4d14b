import { SmsWorkerError } from '../../errors.ts';
import type { PartitionClaim } from './claim.ts';
import {
  CLAIM_MOVES,
  MEMBERSHIP_MOVES,
  RECORD_MOVES,
  type ClaimEvent,
  type ClaimInvariant,
  type ClaimState,
  type MembershipEvent,
  type MembershipState,
  type RecordEvent,
  type RecordState,
} from './table.ts';

/**
 * A machine found one of its own invariants broken (table.ts: CLAIM_INVARIANTS,
 * MEMBERSHIP_INVARIANTS): a bug of the machine or of what drives it, never a fault of the world.
 * Thrown in tests; a lane reports it (an error log line naming the invariant, a metric) and fails
 * its claim, so the partition is claimed afresh from what the broker has.
 */
export class ProtocolViolation extends SmsWorkerError {
  readonly invariant: ClaimInvariant | 'listed-moves-only';
  constructor(invariant: ClaimInvariant | 'listed-moves-only', detail: string) {
    super('PROTOCOL_VIOLATION', `protocol invariant ${invariant} broken: ${detail}`, { retryable: false });
    this.invariant = invariant;
  }
}

/** What the checks read of a record (record-book.ts's RecordEntry). */
export interface CheckedRecord {
  readonly offset: bigint;
  readonly key: string;
  state: RecordState;
  readonly permitHeld: boolean;
  readonly slotHeld: boolean;
}

/** Moves a record to `to` on `event`, refusing any move table.ts does not list. */
export function moveRecord(entry: CheckedRecord, event: RecordEvent, to: RecordState): void {
  if (!RECORD_MOVES.has(`${entry.state}|${event}|${to}`))
    throw new ProtocolViolation('listed-moves-only', `record ${entry.offset} cannot go from ${entry.state} to ${to} on ${event}`);
  entry.state = to;
}

/** The claim's next state on `event`, refusing any move the table does not list. */
export function moveClaim(from: ClaimState, event: ClaimEvent, to: ClaimState): ClaimState {
  if (!CLAIM_MOVES.has(`${from}|${event}|${to}`)) throw new ProtocolViolation('listed-moves-only', `the claim cannot go from ${from} to ${to} on ${event}`);
  return to;
}

/** The membership's next state on `event` (the table has exactly one move for each). */
export function moveMembership(from: MembershipState, event: MembershipEvent): MembershipState {
  const to = MEMBERSHIP_MOVES.get(`${from}|${event}`);
  if (to === undefined || to === 'removed') throw new ProtocolViolation('listed-moves-only', `membership has no move from ${from} on ${event}`);
  return to;
}

/** What the partition machine shows of itself for its checks. */
export interface ClaimView {
  readonly state: ClaimState;
  readonly ledger: boolean;
  readonly claim: PartitionClaim;
  /** The records that moved or were looked up since the last check (RecordBook.takeTouched): only they can have broken a record invariant. */
  readonly touched: Iterable<CheckedRecord>;
  /** Whether the record is the oldest in hand of its key. */
  readonly oldestOfKey: (record: CheckedRecord) => boolean;
  readonly inHand: number;
  /** Whether the record's mark is still to commit: waiting for a transaction, or in the one under way. */
  readonly markUncommitted: (offset: bigint) => boolean;
  readonly transactionUnderWay: boolean;
  /** The committed position at the last check. */
  readonly committedBefore: bigint;
}

const ABOUT_TO_CALL: ReadonlySet<RecordState> = new Set(['held', 'calling']);
const ASKING: ReadonlySet<RecordState> = new Set(['awaiting-permit', 'marking']);
const MAY_HOLD_PERMIT: ReadonlySet<RecordState> = new Set(['marking', 'awaiting-slot']);
const IN_HAND_PAST_QUEUED: ReadonlySet<RecordState> = new Set(['handling', 'awaiting-permit', 'marking', 'awaiting-slot', 'held', 'calling']);

/**
 * The first claim invariant `view` breaks (CLAIM_INVARIANTS), or undefined. The record invariants
 * are checked of the records touched since the last check (a record that neither moved nor was
 * looked up cannot have changed), so a check costs what the event did, not the book's size.
 */
export function brokenClaimInvariant(view: ClaimView): ProtocolViolation | undefined {
  const { claim } = view;
  if (claim.position.committed < view.committedBefore)
    return new ProtocolViolation('offset-only-forward', `the committed position went from ${view.committedBefore} back to ${claim.position.committed}`);
  if (view.state === 'ended' && (view.inHand > 0 || view.transactionUnderWay))
    return new ProtocolViolation(
      'ended-holds-nothing',
      `the claim ended with ${view.inHand} records in hand${view.transactionUnderWay ? ' and a transaction under way' : ''}`,
    );
  for (const record of view.touched) {
    const broken = brokenRecordInvariant(view, record);
    if (broken !== undefined) return broken;
  }
  return undefined;
}

function brokenRecordInvariant(view: ClaimView, record: CheckedRecord): ProtocolViolation | undefined {
  const { offset, state } = record;
  if (IN_HAND_PAST_QUEUED.has(state) && !view.oldestOfKey(record))
    return new ProtocolViolation('one-at-a-time-per-key', `record ${offset} is ${state} while an earlier record of its key is in hand`);
  if (record.permitHeld && !MAY_HOLD_PERMIT.has(state))
    return new ProtocolViolation('permits-while-marking', `record ${offset} holds a mark permit while ${state}`);
  if (record.slotHeld && ASKING.has(state)) return new ProtocolViolation('slots-only-past-marks', `record ${offset} holds a slot while ${state}`);
  if (!ABOUT_TO_CALL.has(state)) return undefined;
  if (!record.slotHeld) return new ProtocolViolation('calls-hold-slots', `record ${offset} is ${state} without a slot`);
  if (view.ledger && (!view.claim.open.has(offset) || view.markUncommitted(offset)))
    return new ProtocolViolation(
      'calls-under-committed-marks',
      `record ${offset} is ${state} ${view.claim.open.has(offset) ? 'while its mark is still to commit' : 'without a mark'}`,
    );
  return undefined;
}
