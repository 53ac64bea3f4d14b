// Geo permissions end to end, with the real broker, registry and the sandbox: a recipient in a
// refused region costs nothing (0 requests at the sandbox) and its command's result says why; an
// allowed one is sent as before; monitor mode sends and counts.
import { afterEach, describe, expect, it } from 'vitest';
import { startWorkerRig, textCommand, voiceCommand } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import type { SendCommand } from '../../src/contracts/command.ts';
import type { Worker } from '../../src/worker/worker.ts';

const sandbox = useSandbox();
afterEach(() => sandbox.state.faults.clearQueue());
const cleanups = useCleanups();

const CN = '+8613800138000';
const US = '+14155552671';
const SG = '+6581234567';

async function setup(overrides: Record<string, string>) {
  const rig = await startWorkerRig(sandbox.url, cleanups, overrides);
  return { ...rig, publish: (commands: SendCommand[]) => rig.publish(commands.map((command) => ({ command }))) };
}

function requestsFor(commandId: string) {
  return sandbox.state.requests({ correlationId: commandId });
}

async function geoSeries(worker: Worker): Promise<string[]> {
  const body = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
  return body.split('\n').filter((line) => line.startsWith('sms_worker_geo_rejections_total{'));
}

describe('geo permissions (GEO_*), end to end', () => {
  it('enforce: a denied region gets 0 requests and a REJECTED result naming the recipient, its region and the rule; an allowed one is SENT', async () => {
    const { worker, results, publish } = await setup({ GEO_TEXT_ALLOWED_REGIONS: 'CN,SG', GEO_VOICE_DENIED_REGIONS: 'CN' });
    const allowed = textCommand({ to: [CN, SG] });
    const denied = textCommand({ to: [CN, US] });
    const voice = voiceCommand();
    await publish([allowed, denied, voice]);
    const got = await results.waitFor([allowed.commandId, denied.commandId, voice.commandId]);

    expect(got.get(allowed.commandId)?.outcome).toBe('SENT');
    expect(
      got
        .get(allowed.commandId)
        ?.messages.map((m) => m.regionCode)
        .sort(),
    ).toEqual(['CN', 'SG']);
    expect(requestsFor(allowed.commandId)).toHaveLength(1);

    const r = got.get(denied.commandId);
    expect(r?.outcome).toBe('REJECTED');
    expect(r?.attempts).toBe(0);
    expect(r?.error).toMatchObject({ code: 'REGION_NOT_ALLOWED', stage: 'VALIDATION', retryable: false });
    expect(r?.error?.details).toEqual([{ field: 'operation.to[1]', problem: "recipient's region US is not in GEO_TEXT_ALLOWED_REGIONS (REGION_NOT_ALLOWED)" }]);
    expect(requestsFor(denied.commandId)).toHaveLength(0);

    // Voice codes go to HOME_REGION only: denying it for voice stops them, and texts to it go on.
    expect(got.get(voice.commandId)?.error?.details).toEqual([
      { field: 'operation.to', problem: "callee's region CN is in GEO_VOICE_DENIED_REGIONS (REGION_NOT_ALLOWED)" },
    ]);
    expect(requestsFor(voice.commandId)).toHaveLength(0);

    expect((await geoSeries(worker)).sort()).toEqual([
      'sms_worker_geo_rejections_total{operation="text",region="US",mode="enforce"} 1',
      'sms_worker_geo_rejections_total{operation="voice",region="CN",mode="enforce"} 1',
    ]);
  });

  it('send-valid: only the refused recipient is dropped and listed; the others are sent', async () => {
    const { results, publish } = await setup({ GEO_DENIED_REGIONS: 'US', PARTIAL_RECIPIENTS: 'send-valid' });
    const mixed = textCommand({ to: [US, CN, SG] });
    await publish([mixed]);
    const r = (await results.waitFor([mixed.commandId])).get(mixed.commandId);
    expect(r?.outcome).toBe('SENT');
    expect(r?.messages.map((m) => m.to).sort()).toEqual([CN, SG].sort());
    expect(r?.rejectedRecipients).toEqual([{ to: US, problem: "recipient's region US is in GEO_DENIED_REGIONS (REGION_NOT_ALLOWED)" }]);
    const requests = requestsFor(mixed.commandId);
    expect(requests).toHaveLength(1);
    expect((requests[0]?.body as { to: string[] }).to).toEqual([CN, SG]);
  });

  it('monitor: sent as usual, counted with mode="monitor"', async () => {
    const { worker, results, publish } = await setup({ GEO_MODE: 'monitor', GEO_ALLOWED_REGIONS: 'CN' });
    const abroad = textCommand({ to: [US] });
    await publish([abroad]);
    const r = (await results.waitFor([abroad.commandId])).get(abroad.commandId);
    expect(r?.outcome).toBe('SENT');
    expect(requestsFor(abroad.commandId)).toHaveLength(1);
    expect(await geoSeries(worker)).toEqual(['sms_worker_geo_rejections_total{operation="text",region="US",mode="monitor"} 1']);
  });
});
