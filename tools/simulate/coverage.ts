import {
  CLAIM_TRANSITIONS,
  RECORD_TRANSITIONS,
  transitionKeys,
  type ClaimEvent,
  type ClaimState,
  type RecordEvent,
  type RecordState,
} from '../../src/worker/protocol/table.ts';

/** The machine's methods, as the driver calls them (what an observed move is attributed to). */
export type Method =
  | 'offer'
  | 'take'
  | 'identify'
  | 'wantSend'
  | 'permitGranted'
  | 'slotGranted'
  | 'waitCut'
  | 'kept'
  | 'finished'
  | 'abandoned'
  | 'crashed'
  | 'commitDue'
  | 'transactionCommitted'
  | 'transactionFailed'
  | 'hold'
  | 'keep'
  | 'retire'
  | 'fail'
  | 'stopSending'
  | 'handedOver';

export type Observed = RecordState | 'removed' | undefined;

const FAILING: ReadonlySet<Method> = new Set(['fail', 'crashed', 'transactionFailed']);

/**
 * Which transitions of table.ts the simulation exercised. The driver snapshots the states of a
 * machine's records and its claim state before and after each call; the event of each move is
 * inferred from the method called (the machine's own moves are private).
 */
export class Coverage {
  readonly records = new Map<string, number>();
  readonly claims = new Map<string, number>();
  /** Inferred moves the table does not list (an inference that is wrong, or a machine that is). */
  readonly unexpected = new Set<string>();
  readonly #recordKeys = transitionKeys(RECORD_TRANSITIONS);
  readonly #claimKeys = transitionKeys(CLAIM_TRANSITIONS);

  /** One record's move during a call (`target`: the call was about this record). */
  record(method: Method, target: boolean, from: Observed, to: Observed, effects: { called: boolean; refused: boolean }): void {
    if (from === undefined || from === 'removed' || to === undefined) return;
    if (to === 'removed' && from !== 'done' && from !== 'published') {
      // Finished and taken into the closing transaction in the same call.
      this.record(method, target, from, 'done', effects);
      from = 'done';
    }
    const event = recordEvent(method, target, from, to, effects);
    if (event === undefined) return;
    const key = `${from}|${event}|${to}`;
    if (!this.#recordKeys.has(key)) this.unexpected.add(`record ${key} (${method})`);
    this.records.set(key, (this.records.get(key) ?? 0) + 1);
  }

  claim(method: Method, from: ClaimState, to: ClaimState): void {
    for (const [a, event, b] of claimPath(method, from, to)) {
      const key = `${a}|${event}|${b}`;
      if (!this.#claimKeys.has(key)) this.unexpected.add(`claim ${key} (${method})`);
      this.claims.set(key, (this.claims.get(key) ?? 0) + 1);
    }
  }

  merge(other: Coverage): void {
    for (const [k, n] of other.records) this.records.set(k, (this.records.get(k) ?? 0) + n);
    for (const [k, n] of other.claims) this.claims.set(k, (this.claims.get(k) ?? 0) + n);
    for (const k of other.unexpected) this.unexpected.add(k);
  }

  /** Transitions of the table never exercised. */
  missing(): { records: string[]; claims: string[] } {
    return {
      records: [...this.#recordKeys].filter((k) => !this.records.has(k)),
      claims: [...this.#claimKeys].filter((k) => !this.claims.has(k)),
    };
  }
}

function recordEvent(
  method: Method,
  target: boolean,
  from: RecordState,
  to: RecordState | 'removed',
  fx: { called: boolean; refused: boolean },
): RecordEvent | undefined {
  if (from === to) {
    if (target && method === 'handedOver' && from === 'handling') return 'handed-over';
    if (!target || method !== 'wantSend') return undefined;
    if (from === 'handling' && fx.refused) return 'stop';
    return undefined;
  }
  if (to === 'removed') return 'committed';
  if (to === 'published') return 'committed-ahead';
  if (from === 'queued') return 'predecessor-ended';
  if (to === 'given-up') return method === 'crashed' && target ? 'crashed' : 'abandoned';
  if (to === 'done') return 'finished';
  if (from === 'held') return to === 'calling' ? 'claim-kept' : 'stop';
  if (to === 'handling') {
    if (from === 'calling') return method === 'kept' ? 'kept' : 'stop';
    if (from === 'marking' && method === 'transactionCommitted') return 'mark-committed';
    if (from === 'awaiting-slot' && method === 'slotGranted' && target) return 'slot-granted';
    return 'stop';
  }
  if (from === 'awaiting-permit') return 'permit-granted';
  if (from === 'marking') return 'mark-committed';
  if (from === 'awaiting-slot') return 'slot-granted';
  return 'want-send';
}

type Step = readonly [ClaimState, ClaimEvent, ClaimState];

function claimPath(method: Method, from: ClaimState, to: ClaimState): Step[] {
  const steps: Step[] = [];
  let at = from;
  if (at === to) return steps;
  if (at === 'active' && method === 'hold') return [['active', 'hold', 'holding']];
  if (at === 'holding' && method === 'keep' && to === 'active') return [['holding', 'keep', 'active']];
  if ((at === 'active' || at === 'holding' || at === 'retiring') && FAILING.has(method) && (to === 'failed' || to === 'ended')) {
    steps.push([at, 'fail', 'failed']);
    at = 'failed';
  } else if ((at === 'active' || at === 'holding') && method === 'retire') {
    steps.push([at, 'retire', 'retiring']);
    at = 'retiring';
  }
  if (at === 'retiring' && at !== to) {
    steps.push(['retiring', 'drained', 'closing']);
    at = 'closing';
  }
  if (at === 'closing' && at !== to) steps.push(['closing', method === 'transactionFailed' ? 'closing-failed' : 'closing-committed', 'ended']);
  if (at === 'failed' && at !== to) steps.push(['failed', 'drained', 'ended']);
  return steps;
}
