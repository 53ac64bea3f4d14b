import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { validateCommand } from '../../../src/contracts/validate.ts';
import { DestinationGuard } from '../../../src/worker/guard/destination-guard.ts';
import { screenHolding } from '../../../src/worker/guard/velocity-hold.ts';
import { DEFAULT_VELOCITY_SETTINGS, type VelocitySettings } from '../../../src/worker/guard/velocity.ts';
import type { SendValidation } from '../../../src/worker/guard/velocity-verdict.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../../src/contracts/policy.ts';
import { textCommand } from '../../contracts/fixtures.ts';

beforeEach(() => vi.useFakeTimers({ now: 1_800_000_000_000 }));
afterEach(() => vi.useRealTimers());

const source = { topic: 't', partition: 0, offset: '0' };

function guard(mode: VelocitySettings['mode'], holdMaxMs = 120_000): DestinationGuard {
  return new DestinationGuard({
    settings: { ...DEFAULT_VELOCITY_SETTINGS, mode, holdMaxMs, blockMs: 1_000, limits: { prefix: { minute: 1, day: 0 }, region: { minute: 0, day: 0 } } },
    now: Date.now,
  });
}

function sendable(expiresAt: number | null = null): { command: ReturnType<typeof textCommand>; validation: SendValidation } {
  const command = { ...textCommand({ to: ['+8613800138000'] }, { createdAt: Date.now() - 1_000 }), expiresAt };
  const validation = validateCommand(command, DEFAULT_VALIDATION_POLICY, Date.now());
  if (validation.kind !== 'send') throw new Error(`not sendable: ${validation.kind}`);
  return { command, validation };
}

describe('VELOCITY_MODE=hold', () => {
  it('a command over the limit waits until the window lets it through, then is sent', async () => {
    const g = guard('hold');
    const first = sendable();
    expect((await screenHolding([g], first.validation, 'reject', first.command, source, new AbortController().signal, Date.now)).kind).toBe('send');
    const second = sendable();
    let verdict: Awaited<ReturnType<typeof screenHolding>> | undefined;
    void screenHolding([g], second.validation, 'reject', second.command, source, new AbortController().signal, Date.now).then((v) => (verdict = v));
    await vi.advanceTimersByTimeAsync(30_000);
    expect(verdict).toBeUndefined(); // the minute's window still holds the first one
    await vi.advanceTimersByTimeAsync(50_000);
    expect(verdict?.kind).toBe('send');
  });

  it('is refused as under enforce once VELOCITY_HOLD_MAX_MS has passed, and EXPIRED when its expiry comes first', async () => {
    const g = guard('hold', 5_000);
    const first = sendable();
    await screenHolding([g], first.validation, 'reject', first.command, source, new AbortController().signal, Date.now);
    const late = sendable();
    const held = screenHolding([g], late.validation, 'reject', late.command, source, new AbortController().signal, Date.now);
    await vi.advanceTimersByTimeAsync(5_000);
    expect((await held).kind).toBe('rejected');
    const expiring = sendable(Date.now() + 2_000);
    const gone = screenHolding([g], expiring.validation, 'reject', expiring.command, source, new AbortController().signal, Date.now);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(await gone).toMatchObject({ kind: 'expired' });
  });

  it('is given up unsent when its signal aborts (a rebalance, shutdown); enforce refuses at once', async () => {
    const g = guard('hold');
    const first = sendable();
    await screenHolding([g], first.validation, 'reject', first.command, source, new AbortController().signal, Date.now);
    const controller = new AbortController();
    const next = sendable();
    const held = screenHolding([g], next.validation, 'reject', next.command, source, controller.signal, Date.now);
    controller.abort(new Error('rebalance'));
    expect(await held).toEqual({ kind: 'abandoned' });
    const enforcing = guard('enforce');
    await screenHolding([enforcing], first.validation, 'reject', first.command, source, new AbortController().signal, Date.now);
    expect((await screenHolding([enforcing], next.validation, 'reject', next.command, source, new AbortController().signal, Date.now)).kind).toBe('rejected');
  });
});

describe('several guards (VELOCITY_* and a tenant’s limits)', () => {
  function limited(prefixPerMinute: number, tenant?: string): DestinationGuard {
    return new DestinationGuard({
      settings: { ...DEFAULT_VELOCITY_SETTINGS, mode: 'enforce', limits: { prefix: { minute: prefixPerMinute, day: 0 }, region: { minute: 0, day: 0 } } },
      now: Date.now,
      ...(tenant !== undefined && { tenant }),
    });
  }

  it('commands screened at the same time never pass a limit together: each is screened and counted by every guard in one step', async () => {
    const deployment = limited(1);
    const acme = limited(5, 'acme');
    const commands = [sendable(), sendable(), sendable()];
    const verdicts = await Promise.all(
      commands.map((c) => screenHolding([deployment, acme], c.validation, 'reject', c.command, source, new AbortController().signal, Date.now)),
    );
    expect(verdicts.map((v) => v.kind)).toEqual(['send', 'rejected', 'rejected']);
  });

  it('a recipient the tenant’s limit refuses is counted by neither: the deployment’s limit stays for other tenants', async () => {
    const deployment = limited(2);
    const acme = limited(1, 'acme');
    const signal = new AbortController().signal;
    const [first, second, other] = [sendable(), sendable(), sendable()];
    expect((await screenHolding([deployment, acme], first.validation, 'reject', first.command, source, signal, Date.now)).kind).toBe('send');
    expect((await screenHolding([deployment, acme], second.validation, 'reject', second.command, source, signal, Date.now)).kind).toBe('rejected');
    // Another tenant's command: the deployment counted one of its two, not the refused one.
    expect((await screenHolding([deployment], other.validation, 'reject', other.command, source, signal, Date.now)).kind).toBe('send');
  });
});
