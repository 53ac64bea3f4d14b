import type { SendFootprint } from '../../contracts/validate.ts';
import type { ProviderRequest } from '../../provider/types.ts';
import { accountsFor, type Routing } from '../../accounts/routing.ts';
import type { FailoverReason } from '../../accounts/failover.ts';
import type { DestinationGuard } from '../guard/destination-guard.ts';
import type { GuardedSender } from './guarded-sender.ts';
import type { Priority } from '../priority/priority.ts';
import type { TenantLimits } from '../tenants/tenant-limits.ts';
import type { MessageReport } from '../../provider/types.ts';
import { isProviderError } from '../../provider/provider-error.ts';
import type { FailoverStep, RoutedOutcome, SendHooks } from './send-outcome.ts';

/** What the record handler sends a validated command through. */
export interface CommandSender {
  /** The velocity limits, for the record handler to screen each validated command with; undefined: off. */
  readonly destinations: DestinationGuard | undefined;
  /** The velocity limits of a tenant (TENANT_LIMITS), screened after the global ones; undefined: none. */
  tenantDestinations?(tenant: string | undefined): DestinationGuard | undefined;
  send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
    /** The command's tenant (TENANT_METADATA_KEY), for its limits and its routing. */
    tenant?: string,
  ): Promise<RoutedOutcome>;
}

export interface FailoverSenderOptions {
  /** One guarded sender per account (its client, pauses, refusal holds and breaker), by name. */
  readonly accounts: ReadonlyMap<string, GuardedSender>;
  readonly routing: Routing;
  /** The priority of the topic this sender serves (a routing rule may name it). */
  readonly priority: Priority;
  /** The limits per tenant (TENANT_LIMITS); undefined: none. */
  readonly tenants?: TenantLimits | undefined;
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

  tenantDestinations(tenant: string | undefined): DestinationGuard | undefined {
    return this.#o.tenants?.destinationsOf(tenant);
  }

  async send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
    tenant?: string,
  ): Promise<RoutedOutcome> {
    // The tenant's limits first (the global ones apply on top, per account): a tenant at its cap
    // waits here, holding no mark and no slot, while other tenants' commands flow past it.
    const pass = this.#o.tenants?.pass(tenant);
    if (pass !== undefined) {
      let taken: 'go' | 'expired';
      try {
        taken = await pass.take(footprint, signal, expiresAt);
      } catch {
        return { kind: 'abandoned', attempts: 0 };
      }
      if (taken === 'expired' && expiresAt !== null) return { kind: 'expired', expiresAt, attempts: 0 };
    }
    let outcome: RoutedOutcome | undefined;
    try {
      outcome = await this.#send(request, correlationId, signal, expiresAt, hooks, footprint, tenant);
      return outcome;
    } finally {
      pass?.settle(charged(outcome));
    }
  }

  async #send(
    request: ProviderRequest,
    correlationId: string,
    signal: AbortSignal,
    expiresAt: number | null,
    hooks: SendHooks | undefined,
    footprint: SendFootprint,
    tenant: string | undefined,
  ): Promise<RoutedOutcome> {
    const list = accountsFor(this.#o.routing, { operation: footprint.operation, regions: footprint.regions, priority: this.#o.priority, tenant });
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

/** What a command's outcome charged, for its tenant's spend cap: its reports, `maybe` when it may have been sent, else nothing. */
function charged(outcome: RoutedOutcome | undefined): readonly MessageReport[] | 'maybe' | 'none' {
  if (outcome === undefined) return 'maybe';
  if (outcome.kind === 'sent') return outcome.success.result.messages;
  // A failure that is not the service's (a bug) may have followed a call: counted as maybe.
  if (outcome.kind === 'failed') return isProviderError(outcome.error) && !outcome.error.ambiguous ? 'none' : 'maybe';
  if (outcome.kind === 'abandoned') return outcome.maybeSent === true ? 'maybe' : 'none';
  return 'none';
}
