// The guards end to end, with the real broker, registry and the sandbox: a pumping burst to one
// number prefix is cut at its velocity limit (the rest REJECTED before any money is spent) while
// other prefixes flow; a spend cap pauses sending at the cap and resumes it when the window
// allows, failing nothing. The cap's "hour" is shortened (SPEND_CAP_HOUR_MS) so a window passes
// within the test; nothing here asserts on elapsed time.
import { afterEach, describe, expect, it } from 'vitest';
import { startWorkerRig, textCommand } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import { eventually } from '../helpers/kafka.ts';
import { pumpingBurst } from '../../src/cli/pumping-burst.ts';
import { parseCommandLine } from '../../src/cli/command-json.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import type { Worker } from '../../src/worker/worker.ts';

const sandbox = useSandbox();
afterEach(() => sandbox.state.faults.clearQueue());
const cleanups = useCleanups();

async function series(worker: Worker, name: string): Promise<string[]> {
  const body = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
  return body.split('\n').filter((line) => line.startsWith(`${name}{`));
}

function burstCommands(count: number): SendCommand[] {
  return pumpingBurst(count).map((line) => {
    const parsed = parseCommandLine(line);
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.value.command;
  });
}

describe('velocity limits (VELOCITY_*), end to end', () => {
  it('a burst of 500 codes to one prefix is cut at the limit; the prefix is blocked; other prefixes flow', async () => {
    const { worker, results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      VELOCITY_PREFIX_DIGITS: '2',
      VELOCITY_PREFIX_PER_DAY: '50',
    });
    const burst = burstCommands(500);
    // The normal stream: other prefixes (CN, SG), interleaved with the burst.
    const normal = Array.from({ length: 40 }, (_, i) =>
      textCommand({ to: [i % 2 === 0 ? `+86138001${String(38000 + i).padStart(5, '0')}` : `+658123${String(4000 + i).padStart(4, '0')}`] }),
    );
    const all = burst.flatMap((command, i) => (i % 12 === 0 && normal[i / 12] !== undefined ? [normal[i / 12] as SendCommand, command] : [command]));
    await publish(all.map((command) => ({ command })));
    const got = await results.waitFor(
      all.map((c) => c.commandId),
      120_000,
    );

    const burstResults = burst.map((c) => got.get(c.commandId));
    const sent = burstResults.filter((r) => r?.outcome === 'SENT');
    const limited = burstResults.filter((r) => r?.error?.code === 'DESTINATION_VELOCITY_LIMITED');
    // One worker owns every partition: its share is the whole limit.
    expect(sent).toHaveLength(50);
    expect(limited).toHaveLength(450);
    expect(limited.every((r) => r?.outcome === 'REJECTED' && r.attempts === 0 && r.error?.retryable === false)).toBe(true);
    expect(limited[0]?.error?.details?.[0]?.problem).toMatch(
      /^recipient's destination \+998 90 \(region UZ\) is over VELOCITY_PREFIX_PER_DAY \(50 per day for the deployment\); prefix blocked until .+Z \(DESTINATION_VELOCITY_LIMITED\)$/,
    );
    // Nothing was spent on them: the sandbox saw exactly the 50 sent.
    const uzRequests = sandbox.state.requests().filter((r) => (r.body as { to?: string[] } | undefined)?.to?.[0]?.startsWith('+99890') === true);
    expect(uzRequests).toHaveLength(50);
    // Other prefixes flowed.
    expect(normal.map((c) => got.get(c.commandId)?.outcome)).toEqual(normal.map(() => 'SENT'));

    expect(await series(worker, 'sms_worker_velocity_rejections_total')).toEqual([
      'sms_worker_velocity_rejections_total{rule="VELOCITY_PREFIX_PER_DAY",region="UZ",mode="enforce",tenant=""} 450',
    ]);
    expect(await series(worker, 'sms_worker_velocity_blocks_total')).toEqual(['sms_worker_velocity_blocks_total{kind="prefix",region="UZ"} 1']);
    expect(await series(worker, 'sms_worker_velocity_blocked_keys')).toEqual(['sms_worker_velocity_blocked_keys{kind="prefix",region="UZ"} 1']);
  });

  it('send-valid: only the recipient over the limit is dropped and listed; the others in its command are sent', async () => {
    const { results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      VELOCITY_REGION_PER_DAY: '1',
      PARTIAL_RECIPIENTS: 'send-valid',
    });
    const first = textCommand({ to: ['+6581234567'] });
    await publish([{ command: first }]);
    await results.waitFor([first.commandId]);
    const mixed = textCommand({ to: ['+8613800138000', '+6591234567'] });
    await publish([{ command: mixed }]);
    const r = (await results.waitFor([mixed.commandId])).get(mixed.commandId);
    expect(r?.outcome).toBe('SENT');
    expect(r?.messages.map((m) => m.regionCode)).toEqual(['CN']);
    expect(r?.rejectedRecipients).toEqual([
      { to: '+6591234567', problem: expect.stringMatching(/^recipient's destination \+65 912 \(region SG\) is over VELOCITY_REGION_PER_DAY/) },
    ]);
  });

  it('hold: a command over the limit waits, then is refused when the hold runs out; other destinations are sent meanwhile', async () => {
    const { results, publish } = await startWorkerRig(sandbox.url, cleanups, {
      VELOCITY_MODE: 'hold',
      VELOCITY_HOLD_MAX_MS: '1500',
      VELOCITY_REGION_PER_DAY: '1',
    });
    const first = textCommand({ to: ['+6581234567'] });
    await publish([{ command: first }]);
    await results.waitFor([first.commandId]);
    const held = textCommand({ to: ['+6591234567'] });
    const other = textCommand({ to: ['+8613800138000'] });
    await publish([{ command: held }, { command: other }]);
    const got = await results.waitFor([held.commandId, other.commandId]);
    expect(got.get(other.commandId)?.outcome).toBe('SENT');
    expect(got.get(held.commandId)?.outcome).toBe('REJECTED');
    expect(got.get(held.commandId)?.error?.code).toBe('DESTINATION_VELOCITY_LIMITED');
    expect(sandbox.state.requests({ correlationId: held.commandId })).toHaveLength(0);
  });
});

describe('spend caps (SPEND_CAP_*), end to end', () => {
  it('at the cap sending pauses (spend_cap), commands wait, and sending resumes when the window allows: nothing fails', async () => {
    // CN costs 0.045 a message: a cap of 0.2 per (shortened, 2 s) hour lets four through per window.
    const { worker, results, publish } = await startWorkerRig(sandbox.url, cleanups, { SPEND_CAP_PER_HOUR: '0.2', SPEND_CAP_HOUR_MS: '2000' });
    const url = `http://127.0.0.1:${worker.httpPort}/metrics`;
    let sawPause = false;
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        const body = await (await fetch(url)).text().catch(() => '');
        if (body.includes('sms_worker_paused{reason="spend_cap"} 1')) sawPause = true;
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    cleanups.add(async () => {
      scraping = false;
      await scraper;
    });

    const commands = Array.from({ length: 14 }, () => textCommand({ to: ['+8613800138000'] }));
    await publish(commands.map((command) => ({ command })));
    const got = await results.waitFor(
      commands.map((c) => c.commandId),
      60_000,
    );
    expect(commands.map((c) => got.get(c.commandId)?.outcome)).toEqual(commands.map(() => 'SENT'));
    // 14 × 0.045 = 0.63 > 0.2: sending had to pause at least twice, and resumed each time.
    await eventually(() => (sawPause ? true : undefined), 10_000, 'the spend_cap pause seen in /metrics');
    expect(await series(worker, 'sms_worker_paused')).toContain('sms_worker_paused{reason="spend_cap"} 0');
    expect(await series(worker, 'sms_worker_spend_cap_micros')).toEqual(['sms_worker_spend_cap_micros{window="hour"} 200000']);
  });
});
