/**
 * VELOCITY_MODE=hold: a command over a velocity limit waits for the limit to let it through
 * instead of being refused at once — up to VELOCITY_HOLD_MAX_MS, or its expiry if sooner — looking
 * again every second. Then it is refused as under `enforce` (or EXPIRED, its expiry passed).
 *
 * While it waits it holds its key (later commands of the same key wait behind it) and one place of
 * its partition's run-ahead: a pumping burst held in full would fill the run-ahead and slow every
 * other destination of its partitions, which is why `enforce` is the default and the wait is bounded.
 * A rebalance or shutdown gives it up unsent (the next owner screens it again).
 */
import type { SendCommand } from '../../contracts/command.ts';
import type { ValidationPolicy } from '../../contracts/policy.ts';
import type { SourcePosition } from '../../contracts/result.ts';
import { abortableDelay } from '../waiting.ts';
import type { DestinationGuard } from './destination-guard.ts';
import type { SendValidation, VelocityVerdict } from './velocity-verdict.ts';

/** How often a held command looks again. */
export const VELOCITY_HOLD_POLL_MS = 1_000;

export type HeldVerdict = VelocityVerdict | { readonly kind: 'expired'; readonly expiresAt: number } | { readonly kind: 'abandoned' };

export async function screenHolding(
  guards: readonly DestinationGuard[],
  validation: SendValidation,
  partial: ValidationPolicy['partialRecipients'],
  command: SendCommand,
  source: SourcePosition,
  signal: AbortSignal,
  now: () => number,
): Promise<HeldVerdict> {
  let verdict = screenAll(guards, validation, partial, command, source, true);
  // Every guard takes VELOCITY_MODE (a tenant's limits too).
  if (verdict.kind === 'send' || !guards.some((g) => g.settings.mode === 'hold')) return verdict;
  const expiresAt = command.expiresAt;
  const holdMaxMs = Math.max(...guards.map((g) => g.settings.holdMaxMs));
  const until = Math.min(now() + holdMaxMs, expiresAt ?? Number.POSITIVE_INFINITY);
  while (verdict.kind === 'rejected' && now() < until) {
    try {
      await abortableDelay(Math.min(VELOCITY_HOLD_POLL_MS, until - now()), signal);
    } catch {
      return { kind: 'abandoned' };
    }
    verdict = screenAll(guards, validation, partial, command, source, false);
  }
  if (verdict.kind === 'rejected' && expiresAt !== null && now() >= expiresAt) return { kind: 'expired', expiresAt };
  return verdict;
}

/**
 * Screens the command with each guard in turn (each takes what the one before let through) and,
 * when all let it through, counts its recipients in every one — in one synchronous step: no other
 * command can be screened between one guard's look and the counts, so concurrent commands never
 * pass a limit together. None counts a recipient another refused: a tenant over its own limit
 * must not use up (and block) the deployment's for every other tenant.
 */
function screenAll(
  guards: readonly DestinationGuard[],
  validation: SendValidation,
  partial: ValidationPolicy['partialRecipients'],
  command: SendCommand,
  source: SourcePosition,
  report: boolean,
): VelocityVerdict {
  let passed = validation;
  for (const guard of guards) {
    const verdict = guard.screen(passed, partial, command, source, report);
    if (verdict.kind !== 'send') return verdict;
    passed = verdict.validation;
  }
  for (const guard of guards) guard.commit(passed);
  return { kind: 'send', validation: passed };
}
