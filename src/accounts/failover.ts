/**
 * Whether a failed call may go on to the command's next account: only when the call proves the
 * command was not sent (the service refused it, or the request never reached the service) and the
 * reason belongs to the account or to the route on that account, not to the command. Pure.
 *
 * Never after an ambiguous outcome (a timeout after the request left, a reset, a 5xx without an
 * envelope, a malformed answer): the first account may have sent it, and a second send reaches
 * the same person twice. That stays UNKNOWN, as it does with one account.
 */
import { INSUFFICIENT_FUNDS_CODE, NO_UPSTREAM_CODE } from '../provider/classify.ts';
import type { FailureClass } from '../provider/types.ts';

/** Why a command left an account for its next one (a result's `failovers[].reason`, a metric label). */
export type FailoverReason =
  /** 101301: this account has no upstream for the command's route. */
  | 'no-route'
  /** 105400: this account's balance does not cover the command. */
  | 'funds'
  /** 401/403/404/407 without an envelope: this account's key, URL or proxy is refused. */
  | 'refused-client'
  /** The request never reached the service (refused connection, DNS, connect timeout), every retry. */
  | 'unreachable'
  /** The account was paused (funds, circuit, throttle, refused client) or the route on it, before any call: nothing was sent. */
  | 'paused';

export const FAILOVER_REASONS: readonly FailoverReason[] = ['no-route', 'funds', 'refused-client', 'unreachable', 'paused'];

/** What a failed call says, as far as failover needs it (ProviderError has these). */
export interface FailedCall {
  readonly failureClass: FailureClass;
  readonly code: string;
  /** The service answered and refused it, and no earlier attempt may have reached it. */
  readonly refused: boolean;
  /** No attempt reached the service (transport or throttled), and no earlier one may have. */
  readonly surelyNotSent: boolean;
  /** The call was cut by shutdown or a rebalance: not the account's doing. */
  readonly aborted?: boolean;
}

/** The reason to fail over after this failed call, or undefined: the command stays on this account (its outcome is this call's). */
export function failoverReason(call: FailedCall): FailoverReason | undefined {
  if (call.aborted === true) return undefined;
  if (call.refused) {
    if (call.code === NO_UPSTREAM_CODE) return 'no-route';
    if (call.code === INSUFFICIENT_FUNDS_CODE || call.failureClass === 'insufficient-funds') return 'funds';
    // 401/403/404/407 without an envelope: the client's key or URL (classify.ts).
    if (call.failureClass === 'configuration') return 'refused-client';
    // Any other business error is about the command (a bad number, a template): the next account would refuse it too.
    return undefined;
  }
  // A throttle is the service's load, not this account's fault; it is waited out, not failed over.
  if (call.surelyNotSent && call.failureClass === 'transport') return 'unreachable';
  return undefined;
}
