import type { ProviderError } from '../../provider/provider-error.ts';
import type { AttemptInfo } from '../../provider/options.ts';
import type { ProviderSuccess } from '../../provider/types.ts';
import type { FailoverReason } from '../../accounts/failover.ts';

/** What became of one command's send through the guarded sender. */
export type SendOutcome =
  | { readonly kind: 'sent'; readonly success: ProviderSuccess; readonly attempts: number }
  | { readonly kind: 'failed'; readonly error: ProviderError | Error; readonly attempts: number }
  | { readonly kind: 'expired'; readonly expiresAt: number; readonly attempts: number }
  /** Given up without a result. `maybeSent`: a call was under way when it was cut (shutdown), so its ledger mark must stay. */
  | { readonly kind: 'abandoned'; readonly attempts: number; readonly maybeSent?: boolean };

/**
 * An account's answer to a command that has another account to go to: not sent here, and why.
 * `code`: the service's code (101301, 105400, PROVIDER_HTTP_401, …) or the pause's reason.
 */
export interface Declined {
  readonly kind: 'declined';
  readonly reason: FailoverReason;
  readonly code: string;
  /** Bounded, never a secret: the service's message, or what was paused. */
  readonly message: string;
  readonly attempts: number;
}

/** One account a command left for the next, in order (a result's `failovers`). */
export interface FailoverStep {
  readonly account: string;
  readonly reason: FailoverReason;
  readonly code: string;
  readonly message: string;
}

/** A command's outcome over its accounts: the account that made the last call (or was last tried), and each one left on the way. */
export type RoutedOutcome = SendOutcome & { readonly account?: string; readonly failovers?: readonly FailoverStep[] };

/**
 * Called around each call to the service, so the caller can keep the intent ledger: `beforeSend`
 * marks the command as being sent and resolves once the mark is committed and a slot is held
 * (false: do not send — the partition is lost or the lease expired); `kept` says the call is over
 * and the command goes back to waiting (a pause, a hold, a retry): its slot is given back, and its
 * mark withdrawn unless `reached` (this call may have reached the service) or an earlier call
 * may have. `onAttempt` observes each HTTP attempt (the command's trace). Each is optional:
 * without the ledger only tracing may need them.
 */
export interface SendHooks {
  /** `account`: the account the call goes through, which the mark names. */
  readonly beforeSend?: (signal: AbortSignal, account?: string) => Promise<boolean>;
  readonly kept?: (reached: boolean) => void;
  readonly onAttempt?: (info: AttemptInfo) => void;
  /** Called just before each call to the service starts (after `beforeSend` cleared it): time to send. */
  readonly callStarting?: () => void;
}
