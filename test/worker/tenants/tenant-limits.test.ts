import { describe, expect, it } from 'vitest';
import type { MessageReport } from '../../../src/provider/types.ts';
import type { SendFootprint } from '../../../src/contracts/validate.ts';
import { MAX_TRACKED_TENANTS, MAX_VELOCITY_TENANTS, TenantLimits } from '../../../src/worker/tenants/tenant-limits.ts';
import { validateCommand } from '../../../src/contracts/validate.ts';
import { DEFAULT_VALIDATION_POLICY } from '../../../src/contracts/policy.ts';
import type { SendCommand } from '../../../src/contracts/command.ts';
import { parseTenantLimits } from '../../../src/worker/tenants/tenant-settings.ts';

const CN: SendFootprint = { operation: 'sms.message.send', regions: ['CN'], costUnits: 1 };
const report = (price: string): MessageReport => ({
  id: 'm',
  to: '+8613800138000',
  regionCode: 'CN',
  countryCode: '86',
  messageCount: 1,
  status: 'sent',
  upstream: 'u',
  price,
});

function limits(json: unknown, now: () => number = Date.now, paused: string[] = []): TenantLimits {
  const problems: string[] = [];
  const settings = parseTenantLimits(JSON.stringify(json), 'tenant', 3_600_000, problems);
  expect(problems).toEqual([]);
  return new TenantLimits(settings, { now, onCapPause: (tenant) => paused.push(tenant) });
}

/** Whether `take` is still waiting after the microtasks and a few ms have run. */
async function stillWaiting(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true)).catch(() => (done = true));
  await new Promise((resolve) => setTimeout(resolve, 20));
  return !done;
}

describe('TenantLimits', () => {
  it('a tenant at its spend cap waits while another tenant goes; the cap pause is reported once, by tenant', async () => {
    const paused: string[] = [];
    const tenants = limits({ '*': { spendCapPerDay: '0.1' } }, Date.now, paused);
    // shop: 0.045 and 0.045 charged; the third (estimated 0.045) would go over 0.1.
    for (let i = 0; i < 2; i += 1) {
      const pass = tenants.pass('shop');
      await pass?.take(CN, new AbortController().signal, null);
      pass?.settle([report('0.045000')]);
    }
    const abort = new AbortController();
    const third = tenants.pass('shop')?.take(CN, abort.signal, null);
    expect(await stillWaiting(third as Promise<unknown>)).toBe(true);
    // Another tenant has its own budget.
    const blog = tenants.pass('blog');
    await expect(blog?.take(CN, new AbortController().signal, null)).resolves.toBe('go');
    expect(paused).toEqual(['shop']);
    abort.abort();
    await expect(third).rejects.toBeDefined();
  });

  it('a command without a tenant, or of a tenant without a limit, has no pass', () => {
    const tenants = limits({ shop: { ratePerSecond: 5 } });
    expect(tenants.pass(undefined)).toBeUndefined();
    expect(tenants.pass('blog')).toBeUndefined();
    expect(tenants.pass('shop')).toBeDefined();
  });

  it('a waiting tenant whose command expires gets `expired`', async () => {
    let now = 1_000_000;
    const tenants = limits({ shop: { spendCapPerDay: '0.05' } }, () => now);
    const first = tenants.pass('shop');
    await first?.take(CN, new AbortController().signal, null);
    first?.settle([report('0.045000')]);
    const second = tenants.pass('shop')?.take(CN, new AbortController().signal, now + 50);
    now += 60;
    await expect(second).resolves.toBe('expired');
  });

  it('past MAX_TRACKED_TENANTS under "*", further tenants share one budget (stricter, never forgotten)', async () => {
    const paused: string[] = [];
    const tenants = limits({ '*': { spendCapPerDay: '0.05' } }, Date.now, paused);
    for (let n = 0; n < MAX_TRACKED_TENANTS; n += 1) expect(tenants.pass(`t${n}`)).toBeDefined();
    const late = tenants.pass('late-1');
    await late?.take(CN, new AbortController().signal, null);
    late?.settle([report('0.045000')]);
    const abort = new AbortController();
    const other = tenants.pass('late-2')?.take(CN, abort.signal, null);
    expect(await stillWaiting(other as Promise<unknown>)).toBe(true);
    expect(paused).toEqual(['other']);
    abort.abort();
    await expect(other).rejects.toBeDefined();
  });

  it("a tenant's velocity limit refuses its recipients past the limit, naming the tenant; another tenant to the same prefix goes", () => {
    const tenants = limits({ shop: { velocityPrefixPerMinute: 2 } });
    const command = (n: number): SendCommand => ({
      commandId: `c${n}`,
      createdAt: 0,
      expiresAt: null,
      metadata: {},
      operation: { kind: 'text', to: [`+861380013800${n}`], signature: 'Acme', content: 'hi' },
    });
    const source = { topic: 't', partition: 0, offset: '0' };
    const screen = (tenant: string, n: number): string => {
      const validation = validateCommand(command(n), DEFAULT_VALIDATION_POLICY, 0);
      if (validation.kind !== 'send') throw new Error('not sendable');
      const guard = tenants.destinationsOf(tenant);
      const verdict = guard?.screen(validation, 'reject', command(n), source);
      if (verdict?.kind === 'send') guard?.commit(verdict.validation);
      return verdict === undefined ? 'no guard' : verdict.kind === 'send' ? 'send' : verdict.problems.map((p) => p.problem).join('; ');
    };
    expect([screen('shop', 1), screen('shop', 2)]).toEqual(['send', 'send']);
    expect(screen('shop', 3)).toContain("is over tenant shop's VELOCITY_PREFIX_PER_MINUTE (2 per minute for the deployment)");
    // blog has no velocity limit of its own; shop's block is shop's alone.
    expect(screen('blog', 4)).toBe('no guard');
    expect(tenants.destinationsOf(undefined)).toBeUndefined();
  });

  it('past MAX_VELOCITY_TENANTS under "*", further tenants get the global limits alone (said once); a named tenant always has its own', () => {
    const problems: string[] = [];
    const settings = parseTenantLimits(JSON.stringify({ '*': { velocityRegionPerDay: 10 }, shop: { velocityRegionPerDay: 5 } }), 'tenant', 3_600_000, problems);
    const untracked: string[] = [];
    const tenants = new TenantLimits(settings, { onVelocityUntracked: (tenant) => untracked.push(tenant) });
    const guards = Array.from({ length: MAX_VELOCITY_TENANTS + 5 }, (_, i) => tenants.destinationsOf(`t${i}`));
    expect(new Set(guards.slice(0, MAX_VELOCITY_TENANTS)).size).toBe(MAX_VELOCITY_TENANTS);
    expect(guards.slice(MAX_VELOCITY_TENANTS)).toEqual([undefined, undefined, undefined, undefined, undefined]);
    expect(untracked).toEqual([`t${MAX_VELOCITY_TENANTS}`]);
    // A tenant seen before the bound keeps its own; a named one gets its own past the bound.
    expect(tenants.destinationsOf('t0')).toBe(guards[0]);
    expect(tenants.destinationsOf('shop')).toBeDefined();
  });
});
