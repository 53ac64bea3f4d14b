/**
 * The limits of each tenant as the process applies them: a spend cap (SpendHolds), a rate limiter
 * and velocity limits (a DestinationGuard) per tenant with limits, each taking this process's
 * share of the deployment-wide limit (as the global ones do), created when the tenant's first
 * command comes.
 *
 * Bounded: the tenants named in TENANT_LIMITS (at most 256) and at most MAX_TRACKED_TENANTS under
 * `*`; commands of further tenants share one more budget, the `*` limit once for all of them
 * (stricter, never looser: forgetting a tenant's spend would let it spend again). Velocity limits
 * count destinations, which cost memory per tenant: each tenant's guard tracks at most
 * TENANT_VELOCITY_KEYS keys, and at most MAX_VELOCITY_TENANTS tenants under `*` have one. Tenants
 * past those get the global velocity limits alone (looser, chosen over sharing one set of counts:
 * a shared count would refuse the recipients of tenants that sent nothing, and a velocity refusal
 * is final, not a wait); `onVelocityUntracked` says so once.
 */
import type { SendFootprint } from '../../contracts/validate.ts';
import type { MessageReport } from '../../provider/types.ts';
import { DestinationGuard, type VelocityObserver } from '../guard/destination-guard.ts';
import { SpendHolds, SpendTicket } from '../guard/spend-holds.ts';
import { DEFAULT_VELOCITY_SETTINGS, type VelocitySettings } from '../guard/velocity.ts';
import { RateLimiter } from '../send/rate-limiter.ts';
import { rateShare } from '../send/rate-share.ts';
import { limitOf, type TenantLimit, type TenantSettings } from './tenant-settings.ts';

/** Tenants under `*` tracked apart; further ones share one budget. */
export const MAX_TRACKED_TENANTS = 1_000;
/** The budget the tenants past MAX_TRACKED_TENANTS share. */
const OVERFLOW = '\u0000overflow';
/** Tenants under `*` with velocity limits of their own; further ones get the global limits alone. */
export const MAX_VELOCITY_TENANTS = 64;
/**
 * Keys (prefixes, regions) each tenant's velocity guard tracks, the least recently seen forgotten
 * first: at most (256 named + MAX_VELOCITY_TENANTS + 1) × 256 × BYTES_PER_TRACKED_KEY (1 KiB) ≈ 80 MiB
 * with every tenant at its bound, 256 KiB per tenant in use.
 */
export const TENANT_VELOCITY_KEYS = 256;

interface TenantGuard {
  readonly spend: SpendHolds | undefined;
  readonly rate: RateLimiter | undefined;
  /** The tenant's deployment-wide rate (its limiter holds this process's share of it). */
  readonly ratePerSecond: number;
}

/** One command's passage through its tenant's limits: `take` before the first call, `settle` once its outcome is known. */
export interface TenantPass {
  /** Waits for the tenant's spend room and a rate token; `expired` when the command's expiry came first; rejects when aborted. */
  take(footprint: SendFootprint, signal: AbortSignal, expiresAt: number | null): Promise<'go' | 'expired'>;
  settle(charged: readonly MessageReport[] | 'maybe' | 'none'): void;
}

export class TenantLimits {
  readonly #settings: TenantSettings;
  readonly #now: () => number;
  readonly #guards = new Map<string, TenantGuard>();
  readonly #onCapPause: ((tenant: string) => void) | undefined;
  readonly #velocity: {
    readonly base: VelocitySettings;
    readonly observer: VelocityObserver | undefined;
    readonly onUntracked: ((tenant: string) => void) | undefined;
  };
  #untrackedReported = false;
  readonly #destinations = new Map<string, DestinationGuard>();
  #velocityTracked = 0;
  #share = { owned: 1, total: 1 };
  #tracked = 0;

  /**
   * `onCapPause`: a tenant's sending paused at its spend cap (its next command must wait for room).
   * `velocity`: VELOCITY_*'s settings, whose mode, prefix digits, dynamic multiple, block and hold
   * each tenant's velocity limits take; `velocityObserver` hears their refusals.
   */
  constructor(
    settings: TenantSettings,
    options: {
      now?: () => number;
      onCapPause?: (tenant: string) => void;
      velocity?: VelocitySettings;
      velocityObserver?: VelocityObserver;
      onVelocityUntracked?: (tenant: string) => void;
    } = {},
  ) {
    this.#settings = settings;
    this.#now = options.now ?? Date.now;
    this.#onCapPause = options.onCapPause;
    this.#velocity = { base: options.velocity ?? DEFAULT_VELOCITY_SETTINGS, observer: options.velocityObserver, onUntracked: options.onVelocityUntracked };
  }

  /**
   * The velocity limits of a command's tenant, for the record handler to screen it with after the
   * global ones; undefined: no tenant, or no velocity limit for it.
   */
  destinationsOf(tenant: string | undefined): DestinationGuard | undefined {
    const velocity = limitOf(this.#settings, tenant)?.velocity;
    if (tenant === undefined || velocity === undefined) return undefined;
    const existing = this.#destinations.get(tenant);
    if (existing !== undefined) return existing;
    const named = this.#settings.named.has(tenant);
    if (!named && this.#velocityTracked >= MAX_VELOCITY_TENANTS) {
      if (!this.#untrackedReported) {
        this.#untrackedReported = true;
        this.#tell(() => this.#velocity.onUntracked?.(tenant));
      }
      return undefined;
    }
    if (!named) this.#velocityTracked += 1;
    const guard = new DestinationGuard({
      settings: { ...this.#velocity.base, limits: velocity, maxTrackedKeys: TENANT_VELOCITY_KEYS },
      now: this.#now,
      tenant,
      ...(this.#velocity.observer !== undefined && { observer: this.#velocity.observer }),
    });
    guard.setShare(this.#share.owned, this.#share.total);
    this.#destinations.set(tenant, guard);
    return guard;
  }

  /** Whether any tenant has a limit. */
  get enabled(): boolean {
    return this.#settings.named.size > 0 || this.#settings.others !== undefined;
  }

  /** The pass of a command of `tenant` (undefined: no tenant, or no limit for it). */
  pass(tenant: string | undefined): TenantPass | undefined {
    const limit = limitOf(this.#settings, tenant);
    if (tenant === undefined || limit === undefined) return undefined;
    const guard = this.#guardOf(tenant, limit);
    const ticket = new SpendTicket(guard.spend);
    return {
      take: async (footprint, signal, expiresAt) => {
        await ticket.take(footprint, signal, expiresAt);
        if (expiresAt !== null && this.#now() >= expiresAt) return 'expired';
        await guard.rate?.take(signal);
        return 'go';
      },
      settle: (charged) => ticket.settle(charged),
    };
  }

  /** This process's share of the deployment's command partitions: every tenant's limits follow it, as the global ones do. */
  setShare(owned: number, total: number): void {
    this.#share = { owned, total };
    for (const guard of this.#guards.values()) this.#apply(guard);
    for (const guard of this.#destinations.values()) guard.setShare(owned, total);
  }

  close(): void {
    for (const guard of this.#guards.values()) guard.spend?.close();
  }

  #guardOf(tenant: string, limit: TenantLimit): TenantGuard {
    const named = this.#settings.named.has(tenant);
    const key = named || this.#guards.has(tenant) || this.#tracked < MAX_TRACKED_TENANTS ? tenant : OVERFLOW;
    const existing = this.#guards.get(key);
    if (existing !== undefined) return existing;
    if (!named && key !== OVERFLOW) this.#tracked += 1;
    const guard: TenantGuard = {
      spend:
        limit.spend === undefined
          ? undefined
          : new SpendHolds({
              settings: limit.spend,
              now: this.#now,
              observer: { onPause: (pause) => (pause === undefined ? undefined : this.#capPaused(key)), onSpend: () => undefined },
            }),
      rate: limit.ratePerSecond > 0 ? new RateLimiter(limit.ratePerSecond) : undefined,
      ratePerSecond: limit.ratePerSecond,
    };
    this.#guards.set(key, guard);
    this.#apply(guard);
    return guard;
  }

  #apply(guard: TenantGuard): void {
    const { owned, total } = this.#share;
    guard.spend?.setShare(owned, total);
    guard.rate?.setRate(rateShare({ limitPerSecond: guard.ratePerSecond, ownedPartitions: owned, totalPartitions: total }));
  }

  #capPaused(tenant: string): void {
    this.#tell(() => this.#onCapPause?.(tenant === OVERFLOW ? 'other' : tenant));
  }

  #tell(report: () => void): void {
    try {
      report();
    } catch {
      // An observer's bug must not change what becomes of a command.
    }
  }
}
