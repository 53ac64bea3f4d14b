// Limits per tenant end to end (real broker, registry and HTTP on loopback): a tenant at its spend
// cap waits (its commands are sent as its window frees room, never over the cap) while another
// tenant's commands are all SENT. The cap's "hour" is shortened (SPEND_CAP_HOUR_MS) so a window
// passes within the test.
import { describe, expect, it } from 'vitest';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { startWorkerRig, textCommand } from '../helpers/worker.ts';

const sandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

describe('worker: limits per tenant (TENANT_LIMITS)', () => {
  it('shop over its cap (0.1 per 2 s, texts at 0.045) waits and never spends over it; every blog command is SENT; all are sent once', async () => {
    const { worker, results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      TENANT_LIMITS: JSON.stringify({ shop: { spendCapPerHour: '0.1' } }),
      SPEND_CAP_HOUR_MS: '2000',
    });
    const shop = Array.from({ length: 5 }, () => textCommand({ metadata: { tenant: 'shop' } }));
    const blog = Array.from({ length: 10 }, () => textCommand({ metadata: { tenant: 'blog' } }));
    await publish([...shop, ...blog].map((command) => ({ command })));
    const got = await results.waitFor(
      [...shop, ...blog].map((c) => c.commandId),
      60_000,
    );
    for (const c of [...shop, ...blog]) {
      expect(got.get(c.commandId)?.outcome, c.commandId).toBe('SENT');
      expect(sandbox.state.acceptedSends(c.commandId), c.commandId).toBe(1);
    }
    // shop's sends as the service saw them: at most two (0.09) within 1.5 s of the first, the
    // third only once the window had room again.
    const shopIds = new Set(shop.map((c) => c.commandId));
    const times = sandbox.state
      .requests()
      .filter((r) => r.correlationId !== undefined && shopIds.has(r.correlationId))
      .map((r) => r.receivedAt)
      .sort((a, b) => a - b);
    expect(times).toHaveLength(5);
    const first = times[0] as number;
    expect(times.filter((t) => t < first + 1_500)).toHaveLength(2);
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_tenant_cap_pauses_total\{tenant="shop"\} [1-9]/m);
    expect(metrics).not.toMatch(/tenant="blog"/);
  });

  it("shop over its own velocity limit (2 recipients per minute to a prefix): the third is REJECTED naming shop's limit, unsent; blog's commands to the same prefix are all SENT", async () => {
    const { worker, results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      TENANT_LIMITS: JSON.stringify({ shop: { velocityPrefixPerMinute: 2 } }),
    });
    // One key: in order, so the third of shop's is the one over the limit.
    const shop = Array.from({ length: 3 }, (_, n) => textCommand({ to: [`+86138001380${10 + n}`], metadata: { tenant: 'shop' } }));
    const blog = Array.from({ length: 5 }, (_, n) => textCommand({ to: [`+86138001380${20 + n}`], metadata: { tenant: 'blog' } }));
    await publish([...shop, ...blog].map((command) => ({ command, key: 'one-key' })));
    const got = await results.waitFor([...shop, ...blog].map((c) => c.commandId));
    expect(shop.map((c) => got.get(c.commandId)?.outcome)).toEqual(['SENT', 'SENT', 'REJECTED']);
    const refused = got.get(shop[2]?.commandId ?? '');
    expect(refused?.error?.code).toBe('DESTINATION_VELOCITY_LIMITED');
    expect(refused?.error?.message).toContain("tenant shop's VELOCITY_PREFIX_PER_MINUTE");
    expect(sandbox.state.requests({ correlationId: shop[2]?.commandId ?? '' })).toHaveLength(0);
    for (const c of blog) expect(got.get(c.commandId)?.outcome, c.commandId).toBe('SENT');
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_velocity_rejections_total\{rule="VELOCITY_PREFIX_PER_MINUTE",region="CN",mode="enforce",tenant="shop"\} 1$/m);
  });

  it("a tenant over its own velocity limit does not use up the deployment's: shop's refused recipients are not counted against blog", async () => {
    const { results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      VELOCITY_PREFIX_PER_MINUTE: '5',
      TENANT_LIMITS: JSON.stringify({ shop: { velocityPrefixPerMinute: 1 } }),
    });
    // All to the prefix +86 138, one key (in order): shop's 1 sent and 3 refused by its own limit,
    // then blog's 4: the deployment's 5 a minute counts 1 + 4.
    const shop = Array.from({ length: 4 }, (_, n) => textCommand({ to: [`+86138001381${10 + n}`], metadata: { tenant: 'shop' } }));
    const blog = Array.from({ length: 4 }, (_, n) => textCommand({ to: [`+86138001381${20 + n}`], metadata: { tenant: 'blog' } }));
    await publish([...shop, ...blog].map((command) => ({ command, key: 'one-key' })));
    const got = await results.waitFor([...shop, ...blog].map((c) => c.commandId));
    expect(shop.map((c) => got.get(c.commandId)?.outcome)).toEqual(['SENT', 'REJECTED', 'REJECTED', 'REJECTED']);
    expect(blog.map((c) => got.get(c.commandId)?.outcome)).toEqual(['SENT', 'SENT', 'SENT', 'SENT']);
  });
});
