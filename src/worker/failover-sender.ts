import type { SendFootprint } from '../contracts/validate.ts';
import type { ProviderRequest } from '../provider/types.ts';
import { accountsFor, type Routing } from '../accounts/routing.ts';
import type { FailoverReason } from '../accounts/failover.ts';
import type { DestinationGuard } from './guard/destination-guard.ts';
import type { GuardedSender } from './guarded-sender.ts';
import type { Priority } from './priority/priority.ts';
import type { FailoverStep, RoutedOutcome, SendHooks } from './send-outcome.ts';

/** What the record handler sends a validated command through. */
export interface CommandSender {
  /** The velocity limits, for the record handler to screen each validated command with; undefined: off. */
  readonly destinations: DestinationGuard | undefined;
  send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
  ): Promise<RoutedOutcome>;
}

export interface FailoverSenderOptions {
  /** One guarded sender per account (its client, pauses, refusal holds and breaker), by name. */
  readonly accounts: ReadonlyMap<string, GuardedSender>;
  readonly routing: Routing;
  /** The priority of the topic this sender serves (a routing rule may name it). */
  readonly priority: Priority;
  /** A command left `from` for its next account (metrics, logs). */
  readonly onFailover?: (from: string, reason: FailoverReason, code: string) => void;
}

/**
 * Sends each command through its accounts in order (src/accounts/routing.ts): every account but
 * the last declines at once what it proves it did not send for a reason of its own (a refusal of
 * its route, funds or key, no connection, a pause); the last one holds and probes as a single
 * account does. An account that may have sent the command ends it there: a timeout, a reset or a
 * 5xx is UNKNOWN, never a send through the next account. So each command is called through at
 * most one account that may have sent it, and each account at most once.
 */
export class FailoverSender implements CommandSender {
  readonly #o: FailoverSenderOptions;
  readonly destinations: DestinationGuard | undefined;

  constructor(options: FailoverSenderOptions) {
    this.#o = options;
    // The guards are the deployment's, shared by every account's sender.
    this.destinations = [...options.accounts.values()][0]?.destinations;
  }

  async send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
  ): Promise<RoutedOutcome> {
    const list = accountsFor(this.#o.routing, { operation: footprint.operation, regions: footprint.regions, priority: this.#o.priority });
    const failovers: FailoverStep[] = [];
    let attempts = 0;
    for (const [index, account] of list.entries()) {
      const sender = this.#o.accounts.get(account);
      // Routing is validated against the accounts at start-up.
      if (sender === undefined) throw new Error(`routing names an account that has no sender: ${account}`);
      const last = index === list.length - 1;
      const outcome = last
        ? await sender.send(request, correlationId, signal, expiresAt, hooks, footprint)
        : await sender.sendOrDecline(request, correlationId, signal, expiresAt, hooks, footprint);
      attempts += outcome.attempts;
      if (outcome.kind !== 'declined') return { ...outcome, attempts, account, failovers };
      failovers.push({ account, reason: outcome.reason, code: outcome.code, message: outcome.message });
      try {
        this.#o.onFailover?.(account, outcome.reason, outcome.code);
      } catch {
        // An observer's bug must not change what becomes of the command.
      }
    }
    throw new Error('a command with no account to send it through');
  }
}
