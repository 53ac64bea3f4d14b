/**
 * The velocity limits at work on each validated command, before anything is spent: screens its
 * recipients (VelocityGuard), decides (velocityVerdict), counts those sent to, and tells the
 * observer (metrics, logs). The clock is injected; nothing here waits or does I/O.
 */
import type { SendCommand } from '../../contracts/command.ts';
import type { ValidationPolicy } from '../../contracts/policy.ts';
import type { SourcePosition } from '../../contracts/result.ts';
import { VelocityGuard, type BlockedKey, type VelocityMode, type VelocityRefusal, type VelocitySettings } from './velocity.ts';
import { velocityVerdict, type SendValidation, type VelocityVerdict } from './velocity-verdict.ts';

export interface VelocityObserver {
  /** Recipients of one command over a limit (refused under enforce, sent anyway under monitor). */
  onRefusals(refusals: readonly VelocityRefusal[], mode: VelocityMode, command: SendCommand, source: SourcePosition): void;
  /** The keys blocked now (when a block starts, and at most every BLOCKED_REFRESH_MS while any is). */
  onBlocked(blocked: readonly BlockedKey[]): void;
}

/** How often, at most, the blocked keys are looked over (blocks end on their own). */
const BLOCKED_REFRESH_MS = 1_000;

export class DestinationGuard {
  readonly #velocity: VelocityGuard;
  readonly #now: () => number;
  readonly #observer: VelocityObserver | undefined;
  readonly #tenant: string | undefined;
  #refreshedAt = -Infinity;
  #anyBlocked = false;

  /** `tenant`: whose limits these are when not the deployment's (TENANT_LIMITS), named in each refusal. */
  constructor(options: { settings: VelocitySettings; now?: () => number; observer?: VelocityObserver; tenant?: string }) {
    this.#velocity = new VelocityGuard(options.settings);
    this.#now = options.now ?? Date.now;
    this.#observer = options.observer;
    this.#tenant = options.tenant;
  }

  /** This process's part of the deployment-wide limits (owned ÷ total partitions). */
  setShare(owned: number, total: number): void {
    const t = Math.max(1, total);
    this.#velocity.setShare(Math.min(t, Math.max(1, owned)) / t);
  }

  get settings(): VelocitySettings {
    return this.#velocity.settings;
  }

  /**
   * The verdict on a command's recipients. Counts nothing: `commit` counts what every guard let
   * through (velocity-hold.ts, screenAll). `report`: tell the observer of refusals (a held
   * command's later looks are not new refusals).
   */
  screen(
    validation: SendValidation,
    partial: ValidationPolicy['partialRecipients'],
    command: SendCommand,
    source: SourcePosition,
    report = true,
  ): VelocityVerdict {
    const now = this.#now();
    const mode = this.#velocity.settings.mode;
    const tenant = this.#tenant;
    const screened = this.#velocity.screen(validation.destinations, now);
    const refusals = tenant === undefined ? screened : screened.map((r) => (r === undefined ? undefined : { ...r, tenant }));
    const verdict = velocityVerdict(validation, refusals, mode, partial);
    const refused = refusals.filter((r): r is VelocityRefusal => r !== undefined);
    if (refused.length > 0 && report) this.#tell(() => this.#observer?.onRefusals(refused, mode, command, source));
    const newBlock = refused.some((r) => r.newlyBlocked);
    if (newBlock || (this.#anyBlocked && now - this.#refreshedAt >= BLOCKED_REFRESH_MS)) {
      this.#refreshedAt = now;
      const blocked = this.#velocity.blocked(now);
      this.#anyBlocked = blocked.length > 0;
      this.#tell(() => this.#observer?.onBlocked(blocked));
    }
    return verdict;
  }

  /** Counts the recipients a command is sent to, once every guard's `screen` let them through. */
  commit(validation: SendValidation): void {
    this.#velocity.commit(validation.destinations, this.#now());
  }

  #tell(report: () => void): void {
    try {
      report();
    } catch {
      // An observer's bug must not change what becomes of a command.
    }
  }
}
