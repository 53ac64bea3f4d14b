/**
 * The partition protocol's states, events and transitions as data: the one source for the
 * machine (partition-machine.ts refuses any move not listed here) and for the state-machine page
 * in docs/ (a test renders this table and compares it with the page).
 */

export const RECORD_STATES = {
  queued: 'fetched and taken; waits for the previous record with its key to end',
  handling: 'decoded, checked and passing the service gate, route holds and rate limit; nothing can have reached the service from here',
  'awaiting-permit':
    'wants to send (ledger on): waits for a mark permit (marks open or committed without a slot stay within the free slots plus the marks ahead the pacing allows)',
  marking: 'its mark is open and waits for the transaction that commits it',
  'awaiting-slot': 'its mark has committed (or the ledger is off): waits for an in-flight slot',
  held: 'about to call (its mark committed, a slot held), but the group is rebalancing: waits for the new assignment',
  calling: 'a call is under way: the service may have the command',
  done: 'its outcome (result, dead letter, duplicate) waits for the next transaction',
  published: 'its outcome is committed ahead of the offset (listed as answered in the checkpoint, ledger on): waits for the records before it',
  'given-up': 'ended without an outcome: its offset is never committed by this claim; the next claim consumes it again',
} as const;

export type RecordState = keyof typeof RECORD_STATES;

export const RECORD_EVENTS = {
  take: 'the fetch loop takes the record (below the run-ahead bound, with bytes in hand)',
  'predecessor-ended': 'the previous record with the same key ended (done or given up)',
  'want-send': 'the record passed the gate, holds and rate limit and asks to call',
  'permit-granted': 'a mark permit was granted',
  'mark-committed': 'the transaction carrying its mark committed',
  'slot-granted': 'an in-flight slot was granted (the lease is checked again here)',
  kept: 'the call is over and the command goes back to waiting: not sent, refused, or an ambiguous answer the operator lets it retry',
  stop: 'a wait was cut or a send refused: the claim retires or fails, sending stopped (a forced stop), or the lease is lost',
  'claim-kept': 'the new generation left the partition with this process: held records go on',
  'handed-over':
    'an earlier owner’s handover says its mark of the record was withdrawn (that owner never called it and never will), or none came within the grace under IN_DOUBT_POLICY=resend',
  finished: 'the handler returned an outcome',
  abandoned: 'the handler returned no outcome (a wait was cut, or shutdown closed a call under way)',
  crashed: 'the handler threw (a bug, not a record problem): the claim fails',
  'committed-ahead': 'a transaction committed the record’s outcome, and listed it as answered in the checkpoint, while a record before it is unfinished',
  committed: 'a transaction committed the offset past the record (and its outcome, unless published ahead)',
} as const;

export type RecordEvent = keyof typeof RECORD_EVENTS;

export interface Transition<S extends string, E extends string> {
  readonly from: S;
  readonly event: E;
  readonly to: S | 'removed';
  readonly effect: string;
}

export const RECORD_TRANSITIONS: readonly Transition<RecordState, RecordEvent>[] = [
  { from: 'queued', event: 'predecessor-ended', to: 'handling', effect: 'handle the record' },
  { from: 'handling', event: 'finished', to: 'done', effect: 'commit within COMMIT_INTERVAL_MS' },
  {
    from: 'handling',
    event: 'abandoned',
    to: 'given-up',
    effect: 'forget its commandId; drop its mark from the next checkpoint, unless a call of it may have reached the service (then it stays)',
  },
  { from: 'handling', event: 'want-send', to: 'awaiting-permit', effect: 'ask for a mark permit' },
  { from: 'handling', event: 'want-send', to: 'marking', effect: 'open its mark (no mark permits); commit at once' },
  { from: 'handling', event: 'want-send', to: 'awaiting-slot', effect: 'ask for a slot (ledger off)' },
  { from: 'handling', event: 'stop', to: 'handling', effect: 'refuse the call' },
  { from: 'handling', event: 'handed-over', to: 'handling', effect: 'drop the earlier owner’s mark; the record is handled as new' },
  { from: 'awaiting-permit', event: 'permit-granted', to: 'marking', effect: 'open its mark; commit at once' },
  { from: 'awaiting-permit', event: 'stop', to: 'handling', effect: 'refuse the call' },
  { from: 'marking', event: 'mark-committed', to: 'awaiting-slot', effect: 'ask for a slot' },
  { from: 'marking', event: 'stop', to: 'handling', effect: 'give the permit back; refuse the call' },
  { from: 'awaiting-slot', event: 'slot-granted', to: 'calling', effect: 'give the permit back; call' },
  { from: 'awaiting-slot', event: 'slot-granted', to: 'handling', effect: 'give the permit back; refuse the call (stopped, or the lease is lost)' },
  { from: 'awaiting-slot', event: 'stop', to: 'handling', effect: 'give the permit back; refuse the call' },
  { from: 'awaiting-slot', event: 'slot-granted', to: 'held', effect: 'give the permit back; wait for the new assignment' },
  { from: 'held', event: 'claim-kept', to: 'calling', effect: 'call' },
  { from: 'held', event: 'stop', to: 'handling', effect: 'refuse the call (the partition moved, the claim failed or stopped sending, or the lease is lost)' },
  {
    from: 'calling',
    event: 'kept',
    to: 'handling',
    effect: 'give its slot back; withdraw its mark (the next checkpoint drops it) unless this call or an earlier one may have reached the service',
  },
  { from: 'calling', event: 'finished', to: 'done', effect: 'commit within COMMIT_INTERVAL_MS' },
  { from: 'calling', event: 'abandoned', to: 'given-up', effect: 'keep its mark (the next owner reports UNKNOWN)' },
  { from: 'handling', event: 'crashed', to: 'given-up', effect: 'fail the claim (the record is consumed again by the next claim)' },
  { from: 'calling', event: 'crashed', to: 'given-up', effect: 'fail the claim; its mark stays (the next owner reports UNKNOWN)' },
  { from: 'done', event: 'committed-ahead', to: 'published', effect: 'report the outcome; drop its mark' },
  { from: 'done', event: 'committed', to: 'removed', effect: 'report the outcome; drop its mark and in-doubt entry' },
  { from: 'published', event: 'committed', to: 'removed', effect: 'nothing more to publish' },
];

export const CLAIM_STATES = {
  active: 'takes records, sends, commits',
  holding: 'the group is rebalancing: takes no records and starts no call (records about to call wait); marks and calls under way go on and commit',
  retiring:
    'the partition moved (or was not kept), or shutdown: takes no records; waits refused; calls under way finish and commit; every marked record’s outcome or withdrawal is also handed over',
  failed:
    'a transaction failed or was fenced, or a bug: every wait is cut; nothing more commits; marked records’ outcomes and withdrawals are still handed over',
  closing: 'nothing left in hand: the last transaction commits what is done',
  ended: 'the lane is over; the claim is lost (fenced) or claimed afresh (failed)',
} as const;

export type ClaimState = keyof typeof CLAIM_STATES;

export const CLAIM_EVENTS = {
  hold: 'the group started rebalancing: the partition may stay or move',
  keep: 'the new generation left the partition with this process, whose lease held throughout: the claim carries on, not fenced again',
  retire: 'the partition moved, the claim is not kept, or shutdown',
  fail: 'a transaction failed (after its retries) or was fenced, or a handler threw',
  drained: 'no record is in hand and no transaction under way',
  'closing-committed': 'the last transaction committed (or there was nothing to commit)',
  'closing-failed': 'the last transaction failed',
} as const;

export type ClaimEvent = keyof typeof CLAIM_EVENTS;

export const CLAIM_TRANSITIONS: readonly Transition<ClaimState, ClaimEvent>[] = [
  { from: 'active', event: 'hold', to: 'holding', effect: 'stop fetching; a record about to call waits (held)' },
  { from: 'holding', event: 'keep', to: 'active', effect: 'held records call; fetch again' },
  { from: 'holding', event: 'retire', to: 'retiring', effect: 'cut the waits for a permit, a mark or a slot; refuse held records' },
  { from: 'holding', event: 'fail', to: 'failed', effect: 'cut every wait; fail the marks waiting for a transaction' },
  { from: 'active', event: 'retire', to: 'retiring', effect: 'stop fetching; cut the waits for a permit, a mark or a slot' },
  { from: 'active', event: 'fail', to: 'failed', effect: 'cut every wait; fail the marks waiting for a transaction' },
  { from: 'retiring', event: 'fail', to: 'failed', effect: 'cut every wait; fail the marks waiting for a transaction' },
  { from: 'retiring', event: 'drained', to: 'closing', effect: 'commit what is done' },
  { from: 'closing', event: 'closing-committed', to: 'ended', effect: 'the lane ends' },
  { from: 'closing', event: 'closing-failed', to: 'ended', effect: 'the lane ends with the failure' },
  {
    from: 'failed',
    event: 'drained',
    to: 'ended',
    effect:
      'the lane ends with the failure: fenced → lost until the next generation, or until two heartbeats confirm this member’s generation (then the fencer was a former member: claimed afresh, at most three times a generation); else claimed afresh from the committed offset',
  },
];

/**
 * A process's membership of its consumer group, as ownership sees it (protocol/ownership.ts): it
 * decides which claims may fence, which are current (may send, may start a producer) and which
 * are kept across a rebalance.
 */
export const MEMBERSHIP_STATES = {
  unjoined: 'started, no assignment yet: nothing is claimed',
  member: 'in its group, with this generation’s assignment: claims fence and are current while the lease holds',
  rebalancing: 'the group rebalances (kafkajs’s REBALANCING) until the new assignment: no claim fences and no producer is initialised; lanes hold',
  'out-of-group':
    'the consumer crashed and restarts in place: it left its group or will be dropped, and joins again as a new member: no claim is current or fences; nothing is kept at the join',
  left: 'shutting down, the process left its group while its lanes finish: no claim is current or fences any more, for good',
} as const;

export type MembershipState = keyof typeof MEMBERSHIP_STATES;

export const MEMBERSHIP_EVENTS = {
  rebalance: 'the group started rebalancing, or a rejoin is tried again in place',
  joined: 'the group gave this member a generation and its assignment',
  'consumer-crashed': 'kafkajs’s consumer crashed and restarts in place',
  leave: 'the process leaves its group (a graceful stop)',
} as const;

export type MembershipEvent = keyof typeof MEMBERSHIP_EVENTS;

const TO_REBALANCING = 'no claim fences; lanes hold (no call starts) until the new assignment';
const TO_MEMBER = 'a new generation: keep what is keepable, claim the rest afresh; partitions lost to fencing are fetched again';
const TO_OUT = 'every lane retires and hands over at once: nothing is kept at the rejoin';
const TO_LEFT = 'no claim is current any more: no call starts, no producer is started again';

export const MEMBERSHIP_TRANSITIONS: readonly Transition<MembershipState, MembershipEvent>[] = [
  { from: 'unjoined', event: 'joined', to: 'member', effect: 'claim the assigned partitions' },
  { from: 'unjoined', event: 'rebalance', to: 'rebalancing', effect: 'nothing is claimed yet' },
  { from: 'unjoined', event: 'consumer-crashed', to: 'out-of-group', effect: 'nothing is claimed yet' },
  { from: 'unjoined', event: 'leave', to: 'left', effect: 'nothing is claimed' },
  { from: 'member', event: 'rebalance', to: 'rebalancing', effect: TO_REBALANCING },
  { from: 'member', event: 'joined', to: 'member', effect: TO_MEMBER },
  { from: 'member', event: 'consumer-crashed', to: 'out-of-group', effect: TO_OUT },
  { from: 'member', event: 'leave', to: 'left', effect: TO_LEFT },
  { from: 'rebalancing', event: 'rebalance', to: 'rebalancing', effect: 'nothing new' },
  { from: 'rebalancing', event: 'joined', to: 'member', effect: TO_MEMBER },
  { from: 'rebalancing', event: 'consumer-crashed', to: 'out-of-group', effect: TO_OUT },
  { from: 'rebalancing', event: 'leave', to: 'left', effect: TO_LEFT },
  { from: 'out-of-group', event: 'rebalance', to: 'out-of-group', effect: 'nothing new: it is a new member at its join' },
  { from: 'out-of-group', event: 'joined', to: 'member', effect: 'a new member: nothing is kept; claim the assigned partitions afresh' },
  { from: 'out-of-group', event: 'consumer-crashed', to: 'out-of-group', effect: 'nothing new' },
  { from: 'out-of-group', event: 'leave', to: 'left', effect: TO_LEFT },
  { from: 'left', event: 'rebalance', to: 'left', effect: 'nothing: it left' },
  { from: 'left', event: 'joined', to: 'left', effect: 'nothing: a join that was under way is not current' },
  { from: 'left', event: 'consumer-crashed', to: 'left', effect: 'nothing: it left' },
  { from: 'left', event: 'leave', to: 'left', effect: 'nothing new' },
];

/** `from|event` → to: the membership moves (each state has one per event). */
export const MEMBERSHIP_MOVES: ReadonlyMap<string, MembershipState | 'removed'> = new Map(MEMBERSHIP_TRANSITIONS.map((t) => [`${t.from}|${t.event}`, t.to]));

/**
 * What the simulation (tools/simulate/shipped-lane.ts) checks of every schedule: the kinds of
 * violation it reports, each broken by a known-bad variant of the shipped code
 * (test/simulate/shipped-variants.test.ts).
 */
export const INVARIANTS = {
  'at-most-one-send':
    'a command has at most one request that may have reached the service (answered, or ambiguously), across every owner and account; under PROVIDER_RETRY_AMBIGUOUS, all from one process',
  'call-under-committed-mark':
    'ledger on: every call starts while the committed checkpoint holds a mark of its command naming the account called, made by a claim of the calling process',
  'exactly-one-result':
    'every command has exactly one committed result (a repeated commandId, none), every undecodable record one dead letter, and the next claim would take nothing again',
  'repeat-after-result':
    'the offset passes a record answered as a repeat only once its command has a committed result (else a later claim’s window takes the repeat for the original, and the command gets no result)',
  'key-order': 'the calls of commands with the same key start in offset order, within each process',
  'result-tells-the-truth': 'SENT only if the service accepted the command; FAILED only if it did not',
  'unknown-is-bounded': 'a process that dies leaves no more commands marked and waiting for a slot than its mark permits (its free slots plus the marks ahead)',
  'unknown-has-a-cause':
    'UNKNOWN for a command never called, or whose every call was answered for sure, only if a crash left it in doubt (a claim that ends any other way hands over what it marked)',
  'within-velocity-limits': 'no process calls more commands to a region or prefix, or of a tenant, than the velocity limits let through',
  'within-spend-cap': 'no process is charged more than its spend cap, beyond what it sent before it knew any price',
  'keep-only-unfenced': 'a claim is kept across a rebalance only if no other producer that fenced its partition since it was made committed anything there',
  'heartbeats-within-session':
    'a member in its group confirms a heartbeat at least once a session whenever nothing of the world keeps it from heartbeating (a real coordinator would drop it)',
  'no-driver-error':
    'no lane fails for anything but the simulated faults, none hangs, every record is answered once the faults stop, and no process logs an error the simulated world did not cause',
} as const;

export type Invariant = keyof typeof INVARIANTS;

/**
 * What each machine asserts of itself after every event (assertions.ts): a broken one is a bug of
 * the machine or its driver, never a fault of the world. The partition machine checks its claim
 * and the records an event touched when its effects are drained; the ownership machine its moves.
 */
export const CLAIM_INVARIANTS = {
  'listed-moves-only': 'a record or the claim moves only as the transition tables list',
  'calls-under-committed-marks': 'ledger on: a record about to call or calling has its mark open in the claim, in no transaction still to commit',
  'calls-hold-slots': 'a record about to call or calling holds an in-flight slot',
  'slots-only-past-marks': 'a record holds no slot while it asks to send or its mark commits (a call kept for later gave its slot back)',
  'permits-while-marking': 'a record holds a mark permit only while its mark commits or it waits for a slot',
  'one-at-a-time-per-key': 'of the records of one key in hand, only the oldest is past `queued`',
  'offset-only-forward': 'the claim’s committed position never moves back',
  'ended-holds-nothing': 'an ended claim has no record in hand (so no slot or permit held: a record gives them back as it ends) and no transaction under way',
} as const;

export type ClaimInvariant = keyof typeof CLAIM_INVARIANTS;

export const MEMBERSHIP_INVARIANTS = {
  'listed-moves-only': 'the membership moves only as its transition table lists (which claims a join keeps is the simulation’s `keep-only-unfenced`)',
} as const;

export type MembershipInvariant = keyof typeof MEMBERSHIP_INVARIANTS;

/** Claim steps, in order: fencing comes before anything is read, so no earlier owner can still write what is read. */
export const CLAIM_STEPS = ['handover', 'fence', 'read'] as const;

export type ClaimStep = (typeof CLAIM_STEPS)[number];

/** `from|event|to`: the moves the machine allows. */
export function transitionKeys<S extends string, E extends string>(table: readonly Transition<S, E>[]): Set<string> {
  return new Set(table.map((t) => `${t.from}|${t.event}|${t.to}`));
}

/** The claim moves the machine allows (the simulation counts the ones it makes: tools/simulate/transition-coverage.ts). */
export const CLAIM_MOVES: ReadonlySet<string> = transitionKeys(CLAIM_TRANSITIONS);

/** The record moves the machine allows (the simulation counts the ones it makes). */
export const RECORD_MOVES: ReadonlySet<string> = transitionKeys(RECORD_TRANSITIONS);
