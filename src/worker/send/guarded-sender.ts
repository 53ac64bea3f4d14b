import type { SendFootprint } from '../../contracts/validate.ts';
import { bounded, NO_UPSTREAM_CODE } from '../../provider/classify.ts';
import type { ProviderError } from '../../provider/provider-error.ts';
import { isProviderError } from '../../provider/provider-error.ts';
import type { FailureClass, ProviderClient, ProviderRequest, ProviderSuccess } from '../../provider/types.ts';
import type { TokenSource } from './rate-limiter.ts';
import { RefusalHolds } from './refusal-holds.ts';
import { DEFAULT_REFUSAL_SCOPE_SETTINGS, type HoldTicket, type RefusalScope } from './refusal-scopes.ts';
import { PAUSE_DESCRIPTIONS, type OutageCounter, type Passage, type PauseReason, type ServiceGate } from './service-gate.ts';
import { fundsPauseError, heldBackError, refusedAgainError } from './refusal-errors.ts';
import type { Declined, SendHooks, SendOutcome } from './send-outcome.ts';
import { failoverReason, type FailoverReason } from '../../accounts/failover.ts';
import type { DestinationGuard } from '../guard/destination-guard.ts';
import { SpendTicket, type SpendHolds } from '../guard/spend-holds.ts';

/** Failure classes that say "the service is not taking requests", not "this command is wrong". */
const OUTAGE: ReadonlySet<FailureClass> = new Set(['transport', 'throttled', 'ambiguous']);

export type { SendHooks, SendOutcome } from './send-outcome.ts';

export interface GuardedSenderOptions {
  /** The account this sender calls through (its label): each ledger mark names it. */
  readonly account?: string;
  readonly client: ProviderClient;
  readonly gate: ServiceGate;
  /** The scoped holds: paused routes (101301) and the cost ceiling (105400 for one command). */
  readonly holds?: RefusalHolds;
  readonly outages: OutageCounter;
  /** Rate-limit tokens, taken at this sender's priority. */
  readonly rateLimiter: TokenSource;
  /** The velocity limits per destination (VELOCITY_*), which the record handler asks before sending; none: off. */
  readonly destinations?: DestinationGuard | undefined;
  /** The spend caps (SPEND_CAP_*): a send waits here, its command kept, while a cap has no room; none: off. */
  readonly spend?: SpendHolds | undefined;
  /** `pause`: hold every send until funds return; `fail`: a FAILED result at once. */
  readonly fundsPolicy: 'pause' | 'fail';
  /**
   * FUNDS_PAUSE_MAX_MS: the longest a command waits while the account has no funds (from its first
   * refusal for the account's funds, or its first wait at the funds pause), then FAILED 105400,
   * retryable; 0 or undefined: until funds return.
   */
  readonly fundsPauseMaxMs?: number | undefined;
  readonly onFailureClass?: (failureClass: FailureClass) => void;
  /**
   * Called when this sender pauses sending for a reason the gate did not have yet, with why in
   * words (the service's code, HTTP status and message, bounded; never a secret), for a warn log.
   */
  readonly onPause?: (reason: PauseReason, why: string) => void;
  /** Every refusal (101301, 105400, 401/403/404/407) with the scope it paused, for metrics and logs. */
  readonly onRefusal?: (code: string, scope: RefusalScope, footprint: SendFootprint) => void;
  readonly now?: () => number;
}

/** How a command leaves the gate: through it, or out of the pause at its expiry or FUNDS_PAUSE_MAX_MS. */
type GateExit = Passage | 'expired' | 'funds-pause-over';

/** What becomes of a failed send: held and sent again later, or given up. */
type Verdict = 'keep' | 'give-up';

/**
 * Refusals of its own a command may get before it is given up: the refusal and one probe (issue
 * 20). Only refusals about the command or its route count; a refusal of the account (its funds,
 * its key) never fails a command (issue 50).
 */
const MAX_REFUSALS = 2;

/** One command's send as the sender follows it through the loop. */
interface SendState {
  readonly ticket: HoldTicket;
  readonly footprint: SendFootprint;
  /** Refusals about this command or its route (101301, 105400 for its cost): the second gives it up. */
  refusals: number;
  /** Refusals of the account (105400 with nothing cheaper to blame, 401/403/404/407): counted only to rotate the probes. */
  accountRefusals: number;
  /** When the account's funds pause first held it (FUNDS_PAUSE_MAX_MS counts from here). */
  fundsPausedSince: number | undefined;
  readonly spend: SpendTicket;
  /**
   * The last failed call that was kept although it may have reached the service (an ambiguous
   * answer, retried under PROVIDER_RETRY_AMBIGUOUS). From then on the command may have been sent:
   * giving up reports `maybeSent` (its ledger mark stays) and running out of time is its failure,
   * never `expired`; a later call that surely did not arrive does not withdraw the mark.
   */
  mayHaveReached: ProviderError | undefined;
  /** Requests made so far, over every call. */
  attempts: number;
  /**
   * The command has another account to go to: a pause of this account or of the route on it
   * declines it at once instead of holding it, and so does a call that proves it was not sent
   * for a reason of the account's (src/accounts/failover.ts). Never once a call may have reached
   * the service (`mayHaveReached`).
   */
  readonly failover: boolean;
}

/** A pass cleared for the call: whether it is the gate's probe, and how to give back what it took. */
interface Call {
  readonly kind: 'call';
  readonly wasProbe: boolean;
  readonly release: () => void;
}

/** What a pass through the loop comes to before the call: the command's end, another pass, or the call. */
type Pass = { readonly kind: 'end'; readonly outcome: SendOutcome | Declined } | { readonly kind: 'again' } | Call;

const AGAIN: Pass = { kind: 'again' };

function end(outcome: SendOutcome | Declined): Pass {
  return { kind: 'end', outcome };
}

/**
 * Sends one command through the client (which retries within its budget and before the command's
 * expiry), behind two kinds of pause:
 * - the process-wide gate (ServiceGate): while funds are exhausted for every command, the circuit is
 *   open, the service throttles beyond the retry budget or refuses this client, the command waits
 *   instead of failing, and may be re-sent as the probe;
 * - the scoped holds (RefusalHolds): a route the service has no upstream for (101301) and the cost
 *   ceiling after a per-command 105400 hold back only the commands they are about, for at most
 *   ROUTE_PAUSE_MAX_MS, before any mark or slot is taken.
 * A command refused twice about itself or its route (the refusal and one probe) is given up; a
 * refusal of the account (its funds, its key) keeps it waiting, however often its probes are
 * refused, until its expiry (EXPIRED) or FUNDS_PAUSE_MAX_MS. A command waiting for another try
 * holds no in-flight slot, and no ledger mark unless an earlier call may have reached the service.
 * Only an AbortSignal (shutdown, rebalance) makes a waiting command give up unsent, so that it is
 * consumed again later; a call aborted by the client's close() (shutdown) is given up the same way.
 */
export class GuardedSender {
  readonly #o: GuardedSenderOptions & { readonly holds: RefusalHolds };
  /** The velocity limits, for the record handler to screen each validated command with; undefined: off. */
  readonly destinations: DestinationGuard | undefined;
  constructor(options: GuardedSenderOptions) {
    this.destinations = options.destinations;
    this.#o = {
      ...options,
      holds: options.holds ?? new RefusalHolds({ settings: DEFAULT_REFUSAL_SCOPE_SETTINGS, ...(options.now === undefined ? {} : { now: options.now }) }),
    };
  }

  /**
   * `expiresAt` is checked again each time the command gets past the gate (a verification code
   * that waited out a pause is not sent late) and is the client's deadline: no retry starts at or
   * after it. A send that ended there without reaching the service is `expired`; one whose last
   * attempt may have reached it stays `failed` (its outcome is unknown). `footprint` (route and
   * expected cost, from validation) scopes refusals; without it a refusal holds the operation.
   */
  async send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null = null,
    hooks?: SendHooks,
    footprint: SendFootprint = { operation: request.operation, regions: [], costUnits: 1 },
  ): Promise<SendOutcome> {
    const outcome = await this.#run(request, correlationId, signal, expiresAt, hooks, footprint, false);
    // Only #run's failover mode declines.
    if (outcome.kind === 'declined') throw new Error(`a send without failover was declined (${outcome.code})`);
    return outcome;
  }

  /**
   * `send` for a command that has another account to go to after this one: `declined` when this
   * account or the route on it is paused, or when a call here proves the command was not sent
   * for a reason of the account's (101301, 105400, a refused key, no connection). The refusal
   * still pauses what it is about here, and the command's mark is withdrawn before it goes on.
   */
  async sendOrDecline(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
  ): Promise<SendOutcome | Declined> {
    return this.#run(request, correlationId, signal, expiresAt, hooks, footprint, true);
  }

  async #run(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
    failover: boolean,
  ): Promise<SendOutcome | Declined> {
    const state: SendState = {
      ticket: this.#o.holds.ticket(footprint),
      footprint,
      refusals: 0,
      accountRefusals: 0,
      fundsPausedSince: undefined,
      spend: new SpendTicket(this.#o.spend),
      mayHaveReached: undefined,
      attempts: 0,
      failover,
    };
    try {
      return await this.#send(request, correlationId, signal, expiresAt, hooks, state);
    } finally {
      // Whatever path ended the send, no probe of a hold stays with it, nor a spend reservation.
      this.#o.holds.release(state.ticket);
      state.spend.settle('none');
    }
  }

  /** The loop: admission (#admit, #clear), then the call (#call), until one of them ends the command. */
  async #send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    state: SendState,
  ): Promise<SendOutcome | Declined> {
    for (;;) {
      const admitted = await this.#admit(request, signal, expiresAt, state);
      if (admitted.kind === 'end') return admitted.outcome;
      if (admitted.kind === 'again') continue;
      const cleared = await this.#clear(signal, expiresAt, hooks, state, admitted);
      if (cleared.kind === 'end') return cleared.outcome;
      if (cleared.kind === 'again') continue;
      const outcome = await this.#call(request, correlationId, expiresAt, hooks, state, cleared);
      if (outcome !== undefined) return outcome;
    }
  }

  /** Through the gate and the scoped holds: the command's end (expired, given up, abandoned), another pass, or on to #clear. */
  async #admit(request: ProviderRequest, signal: AbortSignal, expiresAt: number | null, state: SendState): Promise<Pass> {
    const { gate, holds } = this.#o;
    const now = this.#o.now ?? Date.now;
    let passage: GateExit;
    if (mayFailOver(state)) {
      const now = gate.passNow(state.footprint.costUnits, state.refusals + state.accountRefusals);
      if (now === 'closed') {
        const reason = gate.reason ?? 'circuit_open';
        return end(declined('paused', reason, `this account is paused: ${PAUSE_DESCRIPTIONS[reason]}`, state));
      }
      passage = now;
    } else {
      try {
        passage = await this.#passGate(signal, expiresAt, state);
      } catch {
        return end(abandoned(state.attempts, state));
      }
    }
    // Left the pause without a call: its expiry came, or FUNDS_PAUSE_MAX_MS.
    if (passage === 'expired' && expiresAt !== null) return end(expired(expiresAt, state.attempts, state));
    if (passage === 'funds-pause-over') {
      if (state.mayHaveReached !== undefined) return end({ kind: 'failed', error: state.mayHaveReached, attempts: state.attempts });
      return end({ kind: 'failed', error: fundsPauseError(request.operation, this.#o.fundsPauseMaxMs ?? 0, state.attempts), attempts: state.attempts });
    }
    const wasProbe = passage === 'probe';
    /** Gives back whatever this pass took: the gate's probe, the holds' probes. */
    const release = (): void => {
      if (wasProbe) gate.releaseProbe();
      holds.release(state.ticket);
    };
    if (expiresAt !== null && now() >= expiresAt) {
      release();
      return end(expired(expiresAt, state.attempts, state));
    }
    const admission = holds.admit(state.ticket);
    if (admission.kind !== 'go' && mayFailOver(state)) {
      // The route (101301) or the cost ceiling (105400) is held on this account: on to the next.
      release();
      return end(
        admission.kind === 'give-up'
          ? declined('paused', admission.code, admission.detail, state)
          : declined('paused', 'HELD', 'its route or its cost is held on this account after a refusal (101301 or 105400); not sent here', state),
      );
    }
    if (admission.kind === 'wait') {
      // Held by a route or the cost ceiling: wait without the gate's probe, then ask again.
      if (wasProbe) gate.releaseProbe();
      try {
        await holds.wait(state.ticket, expiresAt === null ? admission.untilMs : Math.min(admission.untilMs, expiresAt), signal);
      } catch {
        return end(abandoned(state.attempts, state));
      }
      return AGAIN;
    }
    if (admission.kind === 'give-up') {
      release();
      // Held back now, but an earlier call of it may have reached the service: its outcome is unknown.
      if (state.mayHaveReached !== undefined) return end({ kind: 'failed', error: state.mayHaveReached, attempts: state.attempts });
      return end({ kind: 'failed', error: heldBackError(request.operation, admission.code, admission.detail, state.attempts), attempts: state.attempts });
    }
    return { kind: 'call', wasProbe, release };
  }

  /** The spend cap, a rate token, the record's own clearance (its mark and slot: `beforeSend`) and a last look at the gate. */
  async #clear(signal: AbortSignal, expiresAt: number | null, hooks: SendHooks | undefined, state: SendState, pass: Call): Promise<Pass> {
    const { gate, holds } = this.#o;
    const now = this.#o.now ?? Date.now;
    try {
      // At a spend cap the command waits (kept, not failed) until a window has room for it.
      await state.spend.take(state.footprint, signal, expiresAt);
      await this.#o.rateLimiter.take(signal);
    } catch {
      pass.release();
      return end(abandoned(state.attempts, state));
    }
    if (expiresAt !== null && now() >= expiresAt) {
      pass.release();
      return end(expired(expiresAt, state.attempts, state));
    }
    let cleared: boolean;
    try {
      cleared = hooks?.beforeSend === undefined || (await hooks.beforeSend(signal, this.#o.account));
    } catch {
      cleared = false;
    }
    if (!cleared) {
      pass.release();
      return end(abandoned(state.attempts, state));
    }
    if (!pass.wasProbe && gate.reason !== undefined) {
      // The gate closed while it waited for its mark and slot (a pause began: funds, the circuit):
      // no call. Back to the gate, holding neither, so a pause costs the service one probe at a
      // time, not every command that was already past the gate.
      holds.release(state.ticket);
      hooks?.kept?.(false);
      return AGAIN;
    }
    return pass;
  }

  /** The call: its outcome, or undefined when the command is kept for another pass. */
  async #call(
    request: ProviderRequest,
    correlationId: string,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    state: SendState,
    pass: Call,
  ): Promise<SendOutcome | Declined | undefined> {
    const { gate, holds } = this.#o;
    try {
      hooks?.callStarting?.();
    } catch {
      // An observer's bug must not change what becomes of the command.
    }
    let success: ProviderSuccess;
    try {
      success = await this.#o.client.send(request, {
        correlationId,
        ...(expiresAt === null ? {} : { deadline: expiresAt }),
        ...(hooks?.onAttempt === undefined ? {} : { onAttempt: hooks.onAttempt }),
      });
    } catch (error) {
      return this.#callFailed(error, expiresAt, hooks, state, pass);
    }
    // Sent: outside the call's try, so nothing here can turn a sent command into a failed one.
    state.attempts += success.attempts;
    state.spend.settle(success.result.messages);
    this.#o.outages.success();
    if (gate.reason === 'insufficient_funds') holds.clearCostCeiling();
    gate.clear();
    holds.succeeded(state.ticket);
    return { kind: 'sent', success, attempts: state.attempts };
  }

  /** A call that failed: judged (#judge), then kept (undefined) or the command's failure. */
  #callFailed(error: unknown, expiresAt: number | null, hooks: SendHooks | undefined, state: SendState, pass: Call): SendOutcome | Declined | undefined {
    const now = this.#o.now ?? Date.now;
    if (!isProviderError(error)) {
      state.spend.settle('maybe');
      pass.release();
      return { kind: 'failed', error: error instanceof Error ? error : new Error(String(error)), attempts: state.attempts };
    }
    state.attempts += error.attempts;
    state.spend.settle(error.surelyNotSent || error.refused ? 'none' : 'maybe');
    // Shutdown closed the client under the call: no result; the partition's next owner sends it.
    // Not a sign of an outage, so the breaker does not count it.
    if (error.aborted) {
      pass.release();
      return abandoned(state.attempts, state, !error.surelyNotSent);
    }
    this.#o.onFailureClass?.(error.failureClass);
    const verdict = this.#judge(error, pass.wasProbe, state);
    const reason = mayFailOver(state) ? failoverReason(error) : undefined;
    if (reason !== undefined) {
      // Surely not sent, for a reason of this account's: what it paused here stays paused, the
      // mark is withdrawn (nothing reached the service), and the command goes to its next account.
      this.#o.holds.release(state.ticket);
      hooks?.kept?.(false);
      return declined(reason, error.code, error.message, state);
    }
    if (verdict === 'keep') {
      // Held for later, holding no slot meanwhile: if the service surely did not send it (it
      // never got it, or refused it: 105400, 101301), its ledger mark is withdrawn too, unless
      // an earlier call of it may have reached the service (kept after an ambiguous answer).
      const reached = !(error.surelyNotSent || error.refused);
      if (reached) state.mayHaveReached = error;
      hooks?.kept?.(reached);
      return undefined;
    }
    this.#o.holds.release(state.ticket);
    const { attempts } = state;
    // An earlier call of it may have reached the service: whatever this one got, its outcome is unknown.
    if (state.mayHaveReached !== undefined && !error.ambiguous) return { kind: 'failed', error: state.mayHaveReached, attempts };
    if (expiresAt !== null && error.surelyNotSent && (error.stopReason === 'deadline' || now() >= expiresAt)) return expired(expiresAt, attempts, state);
    if (state.refusals > 0 && (error.failureClass === 'insufficient-funds' || error.code === NO_UPSTREAM_CODE)) {
      return { kind: 'failed', error: refusedAgainError(error, state, attempts), attempts };
    }
    return { kind: 'failed', error, attempts };
  }

  /**
   * Waits at the gate (ServiceGate.pass): `left` when the command's expiry comes first, or, while
   * the account has no funds, FUNDS_PAUSE_MAX_MS since that pause first held it. The probe is the
   * cheapest command waiting, then the one refused fewest times, so probes rotate.
   */
  async #passGate(signal: AbortSignal, expiresAt: number | null, state: SendState): Promise<GateExit> {
    const { gate } = this.#o;
    const now = this.#o.now ?? Date.now;
    const maxMs = this.#o.fundsPauseMaxMs ?? 0;
    for (;;) {
      const funds = gate.reason === 'insufficient_funds';
      if (funds) state.fundsPausedSince ??= now();
      const fundsDeadline = funds && maxMs > 0 && state.fundsPausedSince !== undefined ? state.fundsPausedSince + maxMs : Infinity;
      const byExpiry = expiresAt !== null && expiresAt <= fundsDeadline;
      const passage = await gate.pass(signal, state.footprint.costUnits, state.refusals + state.accountRefusals, byExpiry ? expiresAt : fundsDeadline);
      if (passage !== 'timeout') return passage;
      if (byExpiry) return 'expired';
      // FUNDS_PAUSE_MAX_MS bounds only the funds pause: another reason now, wait on (for its expiry only).
      if (gate.reason === 'insufficient_funds') return 'funds-pause-over';
    }
  }

  /** Updates the gate, the holds and the breaker for one failed call, and says whether its command is kept. */
  #judge(error: ProviderError, wasProbe: boolean, state: SendState): Verdict {
    const { gate, outages, holds } = this.#o;
    const refusalPause =
      error.failureClass === 'configuration'
        ? 'provider_rejecting'
        : error.failureClass === 'insufficient-funds' && this.#o.fundsPolicy === 'pause'
          ? 'insufficient_funds'
          : undefined;
    if (refusalPause !== undefined) {
      // The service answered, so it is up, but refused: 105400 for the cost of this command or
      // the account's funds, 101301 for its route unless several routes get it with nothing
      // going through, 401/403/404/407 for this client (every command would get the same).
      // RefusalScopes says which; only the account pauses all sending.
      outages.success();
      const scope = this.#scopeOf(error, state);
      this.#refusal(error, scope, state);
      if (scope === 'account' && error.code !== NO_UPSTREAM_CODE) {
        // The account's funds or key: the command did nothing wrong. It waits for the pause to
        // lift (a probe that goes through), its expiry, a rebalance or FUNDS_PAUSE_MAX_MS, and
        // is never failed for the account; refused as a probe, the next probe is another command.
        state.accountRefusals += 1;
        if (refusalPause === 'insufficient_funds') state.fundsPausedSince ??= (this.#o.now ?? Date.now)();
        this.#block(refusalPause, wasProbe, error);
        return 'keep';
      }
      // About the command or its route (or several routes refused at once): kept once, for a
      // probe; refused twice it is given up, so no single command can hold the worker.
      state.refusals += 1;
      if (scope === 'account') this.#block(refusalPause, wasProbe, error);
      else if (wasProbe) this.#answeredProbe();
      return state.refusals >= MAX_REFUSALS ? 'give-up' : 'keep';
    }
    if (error.failureClass === 'throttled' && error.stopReason === 'retry-after-exceeds-budget' && error.retryAfterMs !== undefined) {
      // The service told us when to come back, later than the budget allows: it surely has not
      // sent the command, so hold it (and everyone else) until then rather than fail it.
      holds.release(state.ticket);
      this.#block('throttled', wasProbe, error, error.retryAfterMs);
      return 'keep';
    }
    if (OUTAGE.has(error.failureClass)) {
      holds.release(state.ticket);
      const open = outages.failure();
      if (open || wasProbe) this.#block('circuit_open', wasProbe, error);
      // Keep the command for after the outage only if re-sending it is safe: an ambiguous
      // failure (it may have been sent) is retryable only when the operator allowed that.
      return (open || wasProbe) && error.retryable ? 'keep' : 'give-up';
    }
    // The service answered about this command: it is up, and has money unless it said otherwise.
    outages.success();
    if (error.failureClass !== 'insufficient-funds') gate.clear();
    else if (wasProbe) gate.releaseProbe();
    return 'give-up';
  }

  /**
   * The gate's probe was answered with a refusal about its route or its cost: the service is up
   * and takes this client, so an outage, a throttle or a refusal of the client is over. It says
   * nothing about the account's funds: then the next caller probes.
   */
  #answeredProbe(): void {
    const { gate } = this.#o;
    if (gate.reason === 'insufficient_funds') gate.releaseProbe();
    else gate.clear();
  }

  /**
   * What a refusal pauses (RefusalScopes), except that a 105400 while the account's funds pause is
   * on is the account's too, whatever the command's cost: nothing cheaper went through to say the
   * balance covers others (a cheaper send clears the pause).
   */
  #scopeOf(error: ProviderError, state: SendState): RefusalScope {
    const { gate, holds } = this.#o;
    if (error.failureClass === 'insufficient-funds' && gate.reason === 'insufficient_funds') {
      holds.release(state.ticket);
      return 'account';
    }
    return holds.refused(state.ticket, error.code);
  }

  #refusal(error: ProviderError, scope: RefusalScope, state: SendState): void {
    try {
      this.#o.onRefusal?.(error.code, scope, state.footprint);
    } catch {
      // An observer's bug must not change what becomes of the command.
    }
  }

  #block(reason: PauseReason, wasProbe: boolean, error: ProviderError, probeInMs?: number): void {
    if (this.#o.gate.reason !== reason) {
      const status = error.httpStatus === undefined ? '' : ` (HTTP ${error.httpStatus})`;
      const said = error.providerMessage === '' ? '' : `: ${error.providerMessage}`;
      try {
        this.#o.onPause?.(reason, `${error.code}${status}${said}`);
      } catch {
        // An observer's bug must not change what becomes of the command.
      }
    }
    if (reason === 'insufficient_funds') this.#o.holds.clearCostCeiling();
    this.#o.gate.block(reason, wasProbe, probeInMs);
  }
}

/** Whether the command may still go to another account: it has one, and no call of it may have reached the service. */
function mayFailOver(state: SendState): boolean {
  return state.failover && state.mayHaveReached === undefined;
}

/** Longest message a declined account passes on (into the result's failovers). */
const MAX_DECLINED_MESSAGE = 300;

function declined(reason: FailoverReason, code: string, message: string, state: SendState): Declined {
  return { kind: 'declined', reason, code, message: bounded(message, MAX_DECLINED_MESSAGE), attempts: state.attempts };
}

/**
 * Given up without a result. `maybeSentNow`: the call under way was cut (undefined: no call was).
 * After a kept call that may have reached the service, it is maybe sent whatever this pass did.
 */
function abandoned(attempts: number, state: SendState, maybeSentNow?: boolean): SendOutcome {
  const maybeSent = maybeSentNow === true || state.mayHaveReached !== undefined;
  return maybeSentNow === undefined && !maybeSent ? { kind: 'abandoned', attempts } : { kind: 'abandoned', attempts, maybeSent };
}

/** Out of time before (another) call: expired, unless an earlier call may have reached the service (then its failure: UNKNOWN). */
function expired(expiresAt: number, attempts: number, state: SendState): SendOutcome {
  return state.mayHaveReached === undefined ? { kind: 'expired', expiresAt, attempts } : { kind: 'failed', error: state.mayHaveReached, attempts };
}
