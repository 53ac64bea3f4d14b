import { describe, expect, it } from 'vitest';
import type { SendCommand } from '../../src/contracts/command.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';
import type { Worker } from '../../src/worker/worker.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { refusingService } from '../helpers/provider.ts';
import { publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, within, workerEnv } from '../helpers/worker.ts';

/**
 * Issue 20 end to end (real broker, registry and HTTP): a refusal stops only what it is about.
 * Timings (the 2× time-to-send target) are the bench's route-refusal section; here the behaviour:
 * who was sent, who failed with what, how many requests, and that all sending never paused.
 */

const sandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

async function setup(baseUrl: string, overrides: Record<string, string> = {}) {
  const topics = testTopics();
  const { worker } = await startTestWorker(workerEnv(topics, baseUrl, { TOPICS_PARTITIONS: '6', ...overrides }));
  cleanups.add(() => worker.stop());
  const publisher = await publisherFor(testKafka(), topics.commands);
  cleanups.add(() => publisher.disconnect());
  const results = await ResultCollector.start(topics.results);
  cleanups.add(() => results.stop());
  return { worker, results, publish: (commands: SendCommand[]) => within(45_000, 'publishing', publisher.publish(commands.map((command) => ({ command })))) };
}

/** Samples the worker's process-wide pause every few ms: every reason it was seen paused for. */
function watchPauses(worker: Worker): { seen: Set<string>; stop: () => void } {
  const seen = new Set<string>();
  const timer = setInterval(() => {
    const reason = worker.pauseReason;
    if (reason !== undefined) seen.add(reason);
  }, 5);
  return { seen, stop: () => clearInterval(timer) };
}

function requestsFor(commandId: string): number {
  return sandbox.state.requests({ correlationId: commandId }).length;
}

const AU = '+61412345678';
const ROUTABLE = ['+8613800138000', '+12025550123', '+6591234567', '+442071838750'];

describe('worker: a refusal stops only what it is about', () => {
  it('a route the service refuses (101301 for AU, 1 command in 100 under steady load) fails only its own commands: every other command is SENT and sending never pauses', async () => {
    const { worker, results, publish } = await setup(sandbox.url);
    const pauses = watchPauses(worker);
    cleanups.add(async () => pauses.stop());
    const commands: SendCommand[] = [];
    // 400 commands in 20 waves of 20, 100 ms apart; every 100th goes to AU.
    for (let wave = 0; wave < 20; wave += 1) {
      const batch = Array.from({ length: 20 }, (_, n) => {
        const index = wave * 20 + n;
        return textCommand({ to: [index % 100 === 50 ? AU : (ROUTABLE[index % ROUTABLE.length] as string)] });
      });
      commands.push(...batch);
      await publish(batch);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const ids = commands.map((c) => c.commandId);
    const got = await results.waitFor(ids, 60_000);
    pauses.stop();
    const refused = commands.filter((c) => c.operation.kind === 'text' && c.operation.to[0] === AU).map((c) => c.commandId);
    expect(refused).toHaveLength(4);
    const routable = ids.filter((id) => !refused.includes(id));
    // Each one not SENT with what it got instead, so a failure says why.
    const notSent = routable.filter((id) => got.get(id)?.outcome !== 'SENT').map((id) => ({ id, result: got.get(id), requests: requestsFor(id) }));
    expect(notSent).toEqual([]);
    for (const id of refused) {
      const result = got.get(id);
      expect(result?.outcome).toBe('FAILED');
      expect(result?.error).toMatchObject({ code: '101301', retryable: true, stage: 'PROVIDER' });
      expect(result?.error?.message).toContain('text to AU');
      // The first is refused (and probes once); later ones may wait out the paused route unsent.
      expect(requestsFor(id)).toBeLessThanOrEqual(2);
    }
    expect(requestsFor(refused[0] as string)).toBeGreaterThanOrEqual(1);
    // Never a process-wide pause: the other routes were not held back.
    expect([...pauses.seen]).toEqual([]);
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_refusals_total\{account="default",code="101301",scope="route"\} [1-9]/m);
    expect(metrics).not.toMatch(/^sms_worker_refusals_total\{account="default",code="101301",scope="account"\}/m);
  });

  it('one unaffordable command among affordable ones: every affordable one is SENT, the large one ends FAILED 105400 (retryable) after at most 2 requests', async () => {
    const { worker, results, publish } = await setup(sandbox.url);
    // 10.000000 covers 222 CN texts at 0.045000; the large one (300 recipients) costs 13.500000.
    sandbox.state.setBalance('10.000000');
    const pauses = watchPauses(worker);
    cleanups.add(async () => pauses.stop());
    const large = textCommand({ to: Array.from({ length: 300 }, (_, n) => `+86138${String(10_000_000 + n)}`) });
    const small = Array.from({ length: 60 }, () => textCommand());
    await publish([large, ...small]);
    const got = await results.waitFor([large.commandId, ...small.map((c) => c.commandId)], 60_000);
    pauses.stop();
    expect(small.filter((c) => got.get(c.commandId)?.outcome !== 'SENT')).toEqual([]);
    const result = got.get(large.commandId);
    expect(result?.outcome).toBe('FAILED');
    expect(result?.error).toMatchObject({ code: '105400', retryable: true });
    expect(requestsFor(large.commandId)).toBeLessThanOrEqual(2);
    expect([...pauses.seen]).toEqual([]);
    expect(sandbox.state.balance).toBe('7.300000');
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_refusals_total\{account="default",code="105400",scope="command"\} 1$/m);
  });

  it('a refusal of this client (401 without an envelope) pauses all sending; its commands wait however often their probes are refused, and are each sent once when the key is taken again', async () => {
    const service = await refusingService(sandbox.url);
    cleanups.add(() => service.close());
    const { worker, results, publish } = await setup(service.url, {
      BREAKER_PROBE_INITIAL_MS: '300',
      BREAKER_PROBE_MAX_MS: '300',
    });
    const commands = Array.from({ length: 4 }, () => textCommand({ to: [ROUTABLE[1] as string] }));
    const ids = commands.map((c) => c.commandId);
    await publish(commands);
    await eventually(() => (worker.pauseReason === 'provider_rejecting' ? true : undefined), 30_000, 'the account-wide pause');
    // Probes every 300 ms, each refused: well past 2 refused requests per command, none failed.
    await eventually(() => (service.requests() >= 3 * commands.length ? true : undefined), 30_000, 'the refused probes');
    expect(results.byCommand.size).toBe(0);
    service.accept();
    const got = await results.waitFor(ids, 30_000);
    for (const id of ids) {
      expect(got.get(id)?.outcome, id).toBe('SENT');
      expect(sandbox.state.acceptedSends(id), id).toBe(1);
    }
    await eventually(() => (worker.pauseReason === undefined ? true : undefined), 10_000, 'the pause lifted');
  });
});

describe('worker: an empty account holds its commands until the top-up (issue 50)', () => {
  it('three commands to an empty account, topped up after 5 s: each refused probe goes back to waiting, no result comes before the top-up, and all three are SENT, each accepted once', async () => {
    // Probes every 500 ms-1 s: several are refused before the top-up (the default 5 s would leave one).
    const { worker, results, publish } = await setup(sandbox.url, { FUNDS_PROBE_INITIAL_MS: '500', FUNDS_PROBE_MAX_MS: '1000' });
    sandbox.state.setBalance('0.000000');
    const commands = Array.from({ length: 3 }, () => textCommand());
    const ids = commands.map((c) => c.commandId);
    await publish(commands);
    await eventually(() => (worker.pauseReason === 'insufficient_funds' ? true : undefined), 30_000, 'the funds pause');
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const refused = ids.reduce((sum, id) => sum + requestsFor(id), 0);
    // The first refusals, then one probe at a time: more refused requests than 2 per command would allow... none failed.
    expect(refused).toBeGreaterThan(3);
    expect(results.byCommand.size).toBe(0);
    sandbox.state.setBalance('100.000000');
    const got = await results.waitFor(ids, 30_000);
    for (const id of ids) {
      expect(got.get(id)?.outcome, id).toBe('SENT');
      expect(sandbox.state.acceptedSends(id), id).toBe(1);
    }
    sandbox.state.setBalance('1000000.000000');
  });

  it(
    'an empty account for 60 s with 1,000 commands waiting: none FAILED, the service sees the first refusals and then one probe at a time, and all are SENT once after the top-up',
    { timeout: 240_000 },
    async () => {
      const maxInFlight = 16;
      const probeInitialMs = 500;
      const probeMaxMs = 2_000;
      const { worker, results, publish } = await setup(sandbox.url, {
        MAX_IN_FLIGHT: String(maxInFlight),
        FUNDS_PROBE_INITIAL_MS: String(probeInitialMs),
        FUNDS_PROBE_MAX_MS: String(probeMaxMs),
      });
      sandbox.state.setBalance('0.000000');
      const commands = Array.from({ length: 1_000 }, () => textCommand());
      const ids = commands.map((c) => c.commandId);
      const idSet = new Set(ids);
      const requested = (): number => sandbox.state.requestSummaries().filter((entry) => idSet.has(entry.correlationId ?? '')).length;
      await publish(commands);
      await eventually(() => (worker.pauseReason === 'insufficient_funds' ? true : undefined), 30_000, 'the funds pause');
      const pausedAt = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 60_000));
      const refused = requested();
      const windowMs = Date.now() - pausedAt;
      // The probe schedule: delays doubling from FUNDS_PROBE_INITIAL_MS to FUNDS_PROBE_MAX_MS, one probe
      // each; before the pause closed the gate, at most MAX_IN_FLIGHT calls were under way.
      let probes = 0;
      for (let t = 0, delay = probeInitialMs; t <= windowMs; delay = Math.min(probeMaxMs, delay * 2)) {
        t += delay;
        probes += 1;
      }
      expect(refused).toBeLessThanOrEqual(maxInFlight + probes);
      expect(refused).toBeGreaterThan(maxInFlight / 2);
      expect([...results.byCommand.values()].flat().filter((r) => r.outcome === 'FAILED')).toEqual([]);
      sandbox.state.setBalance('1000000.000000');
      const got = await results.waitFor(ids, 120_000);
      expect(ids.filter((id) => got.get(id)?.outcome !== 'SENT')).toEqual([]);
      expect(ids.filter((id) => sandbox.state.acceptedSends(id) !== 1)).toEqual([]);
    },
  );
});
