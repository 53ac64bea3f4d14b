import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeDeadLetter } from '../helpers/dead-letters.ts';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { publisherFor, ResultCollector, startTestWorker, startWorkerRig, testTopics, textCommand, voiceCommand, workerEnv } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';

const sandbox = useSandbox();
afterEach(() => {
  sandbox.setFaults({ down: false, rates: {}, latency: { kind: 'none' } });
  sandbox.state.faults.clearQueue();
});
const cleanups = useCleanups();

const setup = (overrides: Record<string, string> = {}) => startWorkerRig(sandbox.url, cleanups, overrides);

function requestsFor(commandId: string) {
  return sandbox.state.requests({ correlationId: commandId });
}

describe('worker: consume, validate, send, publish, commit', () => {
  it('sends a multi-region text, a template text and a voice code, and publishes their reports', async () => {
    const { publish, results } = await setup();
    const multi = textCommand({ to: ['+8613800138000', '+14155552671', '+6581234567', '13800138000'] });
    const template = textCommand({
      operation: { kind: 'text', to: ['+8613900139000'], signature: '合一短信', templateId: 'pub_verif_ttl', templateData: { code: '6666', ttl: '5' } },
    });
    const voice = voiceCommand('+8618509872103', '4321');
    await publish([{ command: multi }, { command: template }, { command: voice }]);
    const got = await results.waitFor([multi.commandId, template.commandId, voice.commandId]);

    const m = got.get(multi.commandId);
    expect(m?.outcome).toBe('SENT');
    // The duplicate (13800138000 is +8613800138000) was removed before sending.
    expect(m?.recipients).toBe(3);
    expect(m?.messages.map((r) => r.regionCode).sort()).toEqual(['CN', 'SG', 'US']);
    for (const report of m?.messages ?? []) {
      expect(report.price).toMatch(/^\d+\.\d{6}$/);
      expect(report.status).toBe('sent');
      expect(report.to).toMatch(/^\+\d+$/);
    }
    expect(m?.totalAmount).toMatch(/^\d+\.\d{6}$/);
    expect(m?.metadata).toEqual({ test: 'yes' });
    expect(m?.source.topic).toMatch(/commands$/);

    expect(got.get(template.commandId)?.outcome).toBe('SENT');
    const v = got.get(voice.commandId);
    expect(v?.outcome).toBe('SENT');
    expect(v?.operation).toBe('VOICE_VERIFICATION');
    // The voice request carried the national number, as the service's example does.
    expect(requestsFor(voice.commandId)[0]?.body).toEqual({ to: '18509872103', code: '4321' });
    expect(requestsFor(multi.commandId)).toHaveLength(1);
  });

  it('rejects invalid commands and expires late ones without calling the service', async () => {
    const { publish, results } = await setup();
    const invalid = textCommand({ operation: { kind: 'text', to: ['12', '+8613800138000'], signature: 'A', content: 'hi' } });
    const badVoice = voiceCommand('+14155552671', '12345');
    const expired = textCommand({ expiresAt: Date.now() - 1_000 });
    await publish([{ command: invalid }, { command: badVoice }, { command: expired }]);
    const got = await results.waitFor([invalid.commandId, badVoice.commandId, expired.commandId]);

    const r = got.get(invalid.commandId);
    expect(r?.outcome).toBe('REJECTED');
    expect(r?.error?.stage).toBe('VALIDATION');
    expect(r?.error?.details.map((d) => d.field).sort()).toEqual(['operation.signature', 'operation.to[0]']);
    const rv = got.get(badVoice.commandId);
    expect(rv?.outcome).toBe('REJECTED');
    expect(rv?.error?.details.map((d) => d.field).sort()).toEqual(['operation.code', 'operation.to']);
    expect(got.get(expired.commandId)?.outcome).toBe('EXPIRED');
    for (const id of [invalid.commandId, badVoice.commandId, expired.commandId]) expect(requestsFor(id)).toHaveLength(0);
  });

  it('fails a command the service answers with a business error, without retrying it', async () => {
    const { publish, results } = await setup();
    const unknownTemplate = textCommand({ operation: { kind: 'text', to: ['+8613800138000'], signature: 'Acme', templateId: 'no_such_template' } });
    await publish([{ command: unknownTemplate }]);
    const r = (await results.waitFor([unknownTemplate.commandId])).get(unknownTemplate.commandId);
    expect(r?.outcome).toBe('FAILED');
    expect(r?.error?.stage).toBe('PROVIDER');
    expect(r?.error?.retryable).toBe(false);
    expect(r?.attempts).toBe(1);
    expect(requestsFor(unknownTemplate.commandId)).toHaveLength(1);
  });

  it('retries a 503 in place and sends', async () => {
    const { publish, results } = await setup();
    sandbox.state.faults.enqueue('http503', 1);
    const command = textCommand();
    await publish([{ command }]);
    const r = (await results.waitFor([command.commandId])).get(command.commandId);
    expect(r?.outcome).toBe('SENT');
    expect(r?.attempts).toBe(2);
    expect(requestsFor(command.commandId).map((q) => q.httpStatus)).toEqual([503, 200]);
  });

  it('an empty account pauses everything on InsufficientFunds, keeps the commands, and sends them when the balance is restored (2 requests each)', async () => {
    // The probe far enough out to see the pause and top up before it.
    const { publish, results, worker } = await setup({ FUNDS_PROBE_INITIAL_MS: '8000', FUNDS_PROBE_MAX_MS: '8000' });
    sandbox.state.setBalance('0.000000');
    const first = textCommand();
    const second = textCommand();
    await publish([{ command: first }, { command: second }]);
    await eventually(() => (worker.pauseReason === 'insufficient_funds' ? true : undefined), 30_000, 'funds pause');
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/sms_worker_paused\{reason="insufficient_funds"\} 1/);
    await eventually(() => (requestsFor(first.commandId).length + requestsFor(second.commandId).length >= 2 ? true : undefined), 30_000, 'the refusals');
    expect(results.byCommand.size).toBe(0);
    // Nothing commits while paused, yet the lag the operator sees stays true: two commands waiting.
    const lag = await eventually(
      async () => {
        const body = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
        const total = [...body.matchAll(/^sms_worker_consumer_lag\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
        return total === 2 ? total : undefined;
      },
      10_000,
      'consumer lag of 2 while paused',
    );
    expect(lag).toBe(2);

    sandbox.state.setBalance('100.000000');
    const got = await results.waitFor([first.commandId, second.commandId]);
    expect(got.get(first.commandId)?.outcome).toBe('SENT');
    expect(got.get(second.commandId)?.outcome).toBe('SENT');
    expect([requestsFor(first.commandId).length, requestsFor(second.commandId).length]).toEqual([2, 2]);
    await eventually(() => (worker.pauseReason === undefined ? true : undefined), 10_000, 'resume');
    sandbox.state.setBalance('1000000.000000');
  });

  it('dead-letters poison records with their origin and moves on', async () => {
    const { raw, publish, results, topics } = await setup();
    const notFramed = Buffer.from('{"not":"avro"}');
    const unknownId = Buffer.concat([Buffer.from([0]), Buffer.from([0x7f, 0xff, 0xff, 0x00]), Buffer.from('xyz')]);
    const truncated = (await raw.encode(textCommand())).subarray(0, 12);
    await raw.publishRaw([
      { key: 'poison-1', value: notFramed, headers: { origin: 'test' } },
      { key: 'poison-2', value: unknownId },
      { key: 'poison-3', value: truncated },
    ]);
    const after = textCommand();
    await publish([{ command: after }]);
    expect((await results.waitFor([after.commandId])).get(after.commandId)?.outcome).toBe('SENT');

    const letters = await decodeDeadLetter(topics.deadLetter, 3);
    const byKey = new Map(letters.map((l) => [l.key?.toString(), l]));
    expect(byKey.get('poison-1')?.error.code).toBe('NOT_CONFLUENT_FRAMING');
    expect(byKey.get('poison-1')?.value?.equals(notFramed)).toBe(true);
    expect(byKey.get('poison-1')?.headers).toEqual([{ key: 'origin', value: Buffer.from('test') }]);
    expect(byKey.get('poison-2')?.error.code).toBe('UNKNOWN_SCHEMA_ID');
    expect(byKey.get('poison-3')?.error.code).toBe('UNDECODABLE');
    for (const letter of letters) {
      expect(letter.source.topic).toBe(topics.commands);
      expect(Number(letter.source.offset)).toBeGreaterThanOrEqual(0);
    }
  });

  it('keeps per-key order while sending different keys in parallel', async () => {
    const { publish, results } = await setup({ MAX_IN_FLIGHT: '16' });
    sandbox.setFaults({ latency: { kind: 'uniform', minMs: 1, maxMs: 40 } });
    const keys = ['user-a', 'user-b', 'user-c'];
    const commands = Array.from({ length: 30 }, (_, i) => ({ command: textCommand({ metadata: { seq: String(i) } }), key: keys[i % 3] as string }));
    await publish(commands);
    await results.waitFor(commands.map((c) => c.command.commandId));
    for (const key of keys) {
      const ids = commands.filter((c) => c.key === key).map((c) => c.command.commandId);
      const sentOrder = sandbox.state
        .requests()
        .filter((q) => q.correlationId !== undefined && ids.includes(q.correlationId))
        .map((q) => q.correlationId);
      expect(sentOrder).toEqual(ids);
    }
  });

  it('exposes metrics, liveness and readiness', async () => {
    const { publish, results, worker } = await setup();
    const command = textCommand({ to: ['+8613800138000', '+14155552671'] });
    await publish([{ command }]);
    await results.waitFor([command.commandId]);
    const base = `http://127.0.0.1:${worker.httpPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const text = await eventually(
      async () => {
        const body = await (await fetch(`${base}/metrics`)).text();
        return /sms_worker_results_total\{operation="TEXT_MESSAGE",outcome="SENT",code="",priority="normal"\} 1/.test(body) ? body : undefined;
      },
      10_000,
      'result counter',
    );
    expect(text).toMatch(/sms_worker_commands_consumed_total 1/);
    expect(text).toMatch(/sms_worker_provider_requests_total\{account="default",operation="sms.message.send",outcome="success"\} 1/);
    expect(text).toMatch(/sms_worker_billed_messages_total\{account="default",region="US",upstream="na.tollfree"\} 1/);
    expect(text).toMatch(/sms_worker_charged_amount_micros_total\{account="default",region="US",upstream="na.tollfree"\} 80000/);
    expect(text).toMatch(/sms_worker_process_cpu_seconds_total/);
    expect(text).not.toContain('test-access-key-id');
  });

  it('gives every command exactly one committed result across a graceful stop and restart', async () => {
    const topics = testTopics();
    const env = workerEnv(topics, sandbox.url, { MAX_IN_FLIGHT: '8' });
    sandbox.setFaults({ latency: { kind: 'fixed', ms: 20 } });
    const first = await startTestWorker(env);
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const commands = Array.from({ length: 200 }, () => ({ command: textCommand({ commandId: `stop-${randomUUID()}` }) }));
    await publisher.publish(commands);
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());
    await eventually(() => (results.byCommand.size >= 20 ? true : undefined), 60_000, 'some results before the stop');
    await first.worker.stop();
    const partial = results.byCommand.size;
    expect(partial).toBeLessThan(commands.length);

    const second = await startTestWorker(env);
    cleanups.add(() => second.worker.stop());
    await results.waitFor(
      commands.map((c) => c.command.commandId),
      90_000,
    );
    await new Promise((r) => setTimeout(r, 1_000));
    const counts = commands.map((c) => results.byCommand.get(c.command.commandId)?.length ?? 0);
    expect(counts.filter((n) => n !== 1)).toEqual([]);
    // A graceful stop finishes what it dispatched: nothing was sent twice.
    const sentTwice = commands.filter((c) => sandbox.state.acceptedSends(c.command.commandId) > 1);
    expect(sentTwice).toEqual([]);
  });
});
