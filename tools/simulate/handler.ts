import type { OpenMark } from '../../src/worker/lane/ledger-checkpoint.ts';
import type { PartitionMachine } from '../../src/worker/protocol/partition-machine.ts';
import type { Method } from './coverage.ts';
import { TIMING, type CommandRecord, type OutcomeKind, type SimOutcome } from './model.ts';
import type { Owner } from './scheduler.ts';
import type { Call } from './service.ts';
import type { World } from './world.ts';

/** What the handler needs of its lane. */
export interface HandlerLane {
  readonly world: World;
  readonly partition: number;
  readonly process: number;
  readonly owner: Owner;
  /** Virtual time of the claim. */
  readonly claimedAt: number;
  /** The claim failed (abort-all): records handed over from now on are given up at once. */
  readonly aborted: boolean;
  leaseHolds(): boolean;
  act<T>(method: Method, offset: number, call: (machine: PartitionMachine<SimOutcome>) => T): T;
  big(offset: number): bigint;
}

/** deciding: decoding and the gate; want: asked to send (waits for call / refuse-call); calling; kept: not sent, will ask again. */
type Step = 'deciding' | 'want' | 'calling' | 'kept';

interface Rec {
  readonly record: CommandRecord;
  step: Step;
  /** Bumped at each call, so a late answer to an earlier one is recognised. */
  calls: number;
  /** The current call may have reached the service. */
  reached: boolean;
  /** Sent again after an ambiguous answer (the operator's trade, PROVIDER_RETRY_AMBIGUOUS). */
  retry: boolean;
  /** Giving up is under way: nothing else happens to it. */
  ending: boolean;
  /** A request sent before the machine said `call` (the known-bad send-before-mark-commits): its answer and when it comes. */
  early?: { readonly call: Call; readonly answerAt: number };
}

/**
 * The record handler of one lane, per `handle` effect: identify → an UNKNOWN result (in doubt), a
 * `duplicate` outcome, a dead letter (undecodable), an immediate REJECTED, or a send: wantSend, and
 * on `call` a request to the service whose answer finishes the record (or keeps it: `kept`, ask
 * again later; ambiguous with retries allowed, its mark stays).
 */
export class Handler {
  readonly #lane: HandlerLane;
  readonly #recs = new Map<number, Rec>();

  constructor(lane: HandlerLane) {
    this.#lane = lane;
  }

  handle(offset: number): void {
    const lane = this.#lane;
    const record = lane.world.kafka.records(lane.partition)[offset];
    if (record === undefined) throw new Error(`p${lane.partition} has no record at ${offset}`);
    const rec: Rec = { record, step: 'deciding', calls: 0, reached: false, retry: false, ending: false };
    this.#recs.set(offset, rec);
    if (lane.aborted) return this.#giveUp(rec, false);
    lane.world.clock.at(lane.world.prng.int(0, 10), lane.owner, () => this.#decide(rec));
  }

  call(offset: number): void {
    const lane = this.#lane;
    const { world } = lane;
    const rec = this.#recs.get(offset);
    if (rec === undefined) throw new Error(`the machine let p${lane.partition}@${offset} call, but its handler has no such record`);
    rec.step = 'calling';
    rec.calls += 1;
    const n = rec.calls;
    const { early } = rec;
    rec.early = undefined;
    const call = early?.call ?? this.#request(rec);
    rec.reached = call.reached;
    world.clock.at(early === undefined ? call.latencyMs : Math.max(0, early.answerAt - world.now), lane.owner, () => this.#answer(rec, n, call));
  }

  /**
   * The known-bad send-before-mark-commits (variants.ts), as a lane would have it: the request
   * leaves as soon as the record's mark opens, before the transaction carrying the mark commits;
   * the machine's `call` later takes its answer.
   */
  callEarly(offset: number): void {
    const rec = this.#recs.get(offset);
    if (rec === undefined || rec.early !== undefined) return;
    const call = this.#request(rec);
    rec.early = { call, answerAt: this.#lane.world.now + call.latencyMs };
  }

  /** The offsets of the records this handler has in hand. */
  offsets(): number[] {
    return [...this.#recs.keys()];
  }

  #request(rec: Rec): Call {
    const lane = this.#lane;
    const { world } = lane;
    const { record } = rec;
    if (world.tracing)
      world.trace(`P${lane.process} p${lane.partition}@${record.offset} calls ${record.commandId}${rec.retry ? ' again (after an ambiguous answer)' : ''}`);
    const call = world.service.call(
      {
        partition: lane.partition,
        offset: record.offset,
        key: record.key,
        commandId: record.commandId,
        process: lane.process,
        time: world.now,
        retry: rec.retry,
      },
      world.settings.retryAmbiguous,
    );
    if (world.tracing) world.trace(`  … the service will answer ${call.answer} in ${call.latencyMs} ms${call.reached ? '' : ' (it never got the request)'}`);
    return call;
  }

  /**
   * Refused: the record gives up unsent. But after an ambiguous answer its earlier request may have
   * reached the service, so it says `maybeSent` and its mark stays (unless the run reproduces the
   * known-bad `handler: 'forgetful'`).
   */
  refused(offset: number): void {
    const rec = this.#recs.get(offset);
    if (rec === undefined || rec.ending) return;
    this.#giveUp(rec, this.#maybeSentBefore(rec));
  }

  /** An earlier request of the record may have arrived (it was kept after an ambiguous answer); the known-bad `forgetful` handler forgets it. */
  #maybeSentBefore(rec: Rec): boolean {
    return rec.retry && this.#lane.world.options.handler !== 'forgetful';
  }

  /**
   * Sending stopped (retired, failed, a forced stop): what waits in the handler — decoding, the
   * gate, holds, the rate limiter (`deciding`), or a kept record waiting to ask again — gives up
   * unsent at once, as partition-lane.ts's handler signal makes it.
   */
  stopWaits(): void {
    for (const rec of this.#recs.values()) {
      if (rec.ending || (rec.step !== 'deciding' && rec.step !== 'kept')) continue;
      this.#giveUp(rec, this.#maybeSentBefore(rec));
    }
  }

  /** The claim failed: every record still in hand ends (a call under way may also be left to answer). */
  abortAll(): void {
    const { prng } = this.#lane.world;
    for (const rec of this.#recs.values()) {
      if (rec.ending) continue;
      if (rec.step === 'calling' && prng.chance(0.5)) continue;
      this.#giveUp(rec, this.#maybeSentBefore(rec) || (rec.step === 'calling' && rec.reached));
    }
  }

  #decide(rec: Rec): void {
    const lane = this.#lane;
    const { world } = lane;
    if (rec.ending || this.#recs.get(rec.record.offset) !== rec) return;
    const { offset, commandId, poison } = rec.record;
    if (this.#crashes()) return this.#crash(rec);
    if (poison) return this.#finish(rec, 'DEAD-LETTER');
    const identity = lane.act('identify', offset, (m) => m.identify(lane.big(offset), commandId));
    if (world.tracing) world.trace(`P${lane.process} p${lane.partition}@${offset} ${commandId} is ${identity.kind}`);
    if (identity.kind === 'in-doubt') return this.#awaitHandover(rec, identity.mark);
    if (identity.kind === 'duplicate') return this.#finish(rec, 'duplicate');
    if (rec.record.rejected) return this.#finish(rec, 'REJECTED');
    this.#want(rec);
  }

  /**
   * An earlier owner's mark: look in the ledger for its handover (as record-handler.ts does), until
   * the grace from the mark's time has passed. Its outcome is this record's; withdrawn (never
   * called), the record is handled as new; nothing by then, UNKNOWN. The record stays `deciding`
   * meanwhile, so a stop or a failed claim gives it up (its mark stays: the next owner looks again).
   */
  #awaitHandover(rec: Rec, mark: OpenMark): void {
    const lane = this.#lane;
    const { world } = lane;
    const { offset } = rec.record;
    // From the mark, or from the claim if later (as handover-lookout.ts counts it).
    const deadline = Math.max(mark.at - TIMING.epochMs, lane.claimedAt) + TIMING.handoverGraceMs;
    const look = (): void => {
      if (rec.ending || this.#recs.get(offset) !== rec) return;
      const found = world.kafka.findHandover(lane.partition, offset, mark.by, world.variant === 'handover-by-offset');
      if (found === undefined) {
        if (world.now >= deadline) return this.#finish(rec, 'UNKNOWN');
        return world.clock.at(world.prng.int(5, 30), lane.owner, look);
      }
      if (world.tracing)
        world.trace(`P${lane.process} p${lane.partition}@${offset} handed over: ${found.outcome === 'withdrawn' ? 'withdrawn' : found.outcome.kind}`);
      if (found.outcome !== 'withdrawn') return this.#finish(rec, found.outcome.kind);
      lane.act('handedOver', offset, (m) => m.handedOver(lane.big(offset)));
      if (rec.record.rejected) return this.#finish(rec, 'REJECTED');
      this.#want(rec);
    };
    look();
  }

  /**
   * Now and then (while faults last) the handler throws: a bug, not a record problem. Also after
   * its claim failed, unless `crashesAfterFailure` is off (see the report: the claim never ends).
   */
  #crashes(): boolean {
    const lane = this.#lane;
    const { world } = lane;
    return world.faulty && world.prng.chance(0.003) && (!lane.aborted || world.options.crashesAfterFailure !== false);
  }

  #crash(rec: Rec): void {
    const lane = this.#lane;
    const { offset } = rec.record;
    if (lane.world.tracing) lane.world.trace(`P${lane.process} p${lane.partition}@${offset} handler throws`);
    this.#recs.delete(offset);
    lane.act('crashed', offset, (m) => m.crashed(lane.big(offset), new Error('a bug in the handler')));
  }

  #want(rec: Rec): void {
    const lane = this.#lane;
    const { offset } = rec.record;
    rec.step = 'want';
    lane.act('wantSend', offset, (m) => m.wantSend(lane.big(offset), lane.leaseHolds(), lane.world.settings.ledger ? epochMs(lane) : 0, lane.world.now));
  }

  #answer(rec: Rec, n: number, call: Call): void {
    const lane = this.#lane;
    const { world } = lane;
    const { offset } = rec.record;
    if (rec.ending || rec.calls !== n || rec.step !== 'calling' || this.#recs.get(offset) !== rec) return;
    if (this.#crashes()) return this.#crash(rec);
    switch (call.answer) {
      case 'sent':
        return this.#finish(rec, 'SENT');
      case 'business-failure':
        return this.#finish(rec, rec.retry ? 'UNKNOWN' : 'FAILED');
      case 'timeout': {
        if (!world.settings.retryAmbiguous || !world.prng.chance(0.5)) return this.#finish(rec, 'UNKNOWN');
        // Kept: it gives its slot back (its mark stays: this call may have reached the service)
        // and asks again once past the gate, the holds and the rate limiter, as guarded-sender.ts
        // does. Sending may stop before then: the record gives up, maybe sent.
        rec.retry = true;
        rec.step = 'kept';
        rec.calls += 1;
        const n = rec.calls;
        lane.act('kept', offset, (m) => m.kept(lane.big(offset), true, lane.world.now));
        world.clock.at(world.prng.int(0, 30), lane.owner, () => {
          if (!rec.ending && rec.calls === n && this.#recs.get(offset) === rec) this.#want(rec);
        });
        return;
      }
      case 'transport': {
        // An attempt of this call was ambiguous (retried within it): maybe sent, as after a timeout;
        // the known-bad `forgetful` handler takes the last attempt's word (a refused connection).
        if (call.earlierAmbiguous && world.options.handler !== 'forgetful') {
          rec.retry = true;
          if (world.prng.chance(0.3)) return this.#finish(rec, 'UNKNOWN');
        }
        if (world.prng.chance(0.3)) return this.#finish(rec, rec.retry ? 'UNKNOWN' : 'FAILED');
        // Kept: it gives its slot back. This call surely did not arrive, but an earlier attempt
        // within it was ambiguous (`rec.retry` just set): then it may have reached the service and
        // the mark stays, as guarded-sender.ts reports it; the known-bad `forgetful` handler says
        // it did not (the machine still keeps the mark of a call kept earlier as maybe reached).
        const reached = call.earlierAmbiguous && world.options.handler !== 'forgetful';
        rec.step = 'kept';
        rec.calls += 1;
        const n = rec.calls;
        lane.act('kept', offset, (m) => m.kept(lane.big(offset), reached, lane.world.now));
        world.clock.at(world.prng.int(5, 40), lane.owner, () => {
          if (!rec.ending && rec.calls === n && this.#recs.get(offset) === rec) this.#want(rec);
        });
        return;
      }
    }
  }

  #finish(rec: Rec, kind: OutcomeKind): void {
    const lane = this.#lane;
    const { offset, commandId } = rec.record;
    this.#recs.delete(offset);
    if (lane.world.tracing) lane.world.trace(`P${lane.process} p${lane.partition}@${offset} finished ${kind}`);
    lane.act('finished', offset, (m) => m.finished(lane.big(offset), { offset, commandId, kind }, lane.world.now));
  }

  #giveUp(rec: Rec, maybeSent: boolean): void {
    const lane = this.#lane;
    const { world } = lane;
    rec.ending = true;
    world.clock.at(world.prng.int(0, 3), lane.owner, () => {
      const { offset } = rec.record;
      if (this.#recs.get(offset) !== rec) return;
      this.#recs.delete(offset);
      if (world.tracing) world.trace(`P${lane.process} p${lane.partition}@${offset} abandoned${maybeSent ? ' (maybe sent)' : ''}`);
      lane.act('abandoned', offset, (m) => m.abandoned(lane.big(offset), maybeSent, lane.world.now));
    });
  }
}

function epochMs(lane: HandlerLane): number {
  return lane.world.now + TIMING.epochMs;
}
