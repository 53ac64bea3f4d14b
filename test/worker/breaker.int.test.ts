import { describe, expect, it } from 'vitest';
import { eventually, testKafka } from '../helpers/kafka.ts';
import { metricTotal, publisherFor, ResultCollector, startTestWorker, testTopics, textCommand, workerEnv } from '../helpers/worker.ts';
import { useCleanups, useSandbox } from '../helpers/fixtures.ts';

const sandbox = useSandbox({}, { resetAfterEach: true });
const cleanups = useCleanups();

describe('worker: circuit breaker', () => {
  it('opens the circuit during an outage, holds the commands, and sends them after a successful probe', async () => {
    const threshold = 2;
    const topics = testTopics();
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { BREAKER_FAILURE_THRESHOLD: String(threshold), PROVIDER_RETRY_ATTEMPTS: '1' }));
    let stopped = false;
    cleanups.add(async () => {
      if (!stopped) await worker.stop();
    });
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    sandbox.setFaults({ down: true });
    const commands = Array.from({ length: 6 }, () => textCommand());
    await publisher.publish(commands.map((command) => ({ command })));

    await eventually(() => (worker.pauseReason === 'circuit_open' ? true : undefined), 60_000, 'the circuit to open');
    const metrics = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(metrics).toMatch(/^sms_worker_paused\{reason="circuit_open"\} 1$/m);
    expect(metrics).toMatch(/^sms_worker_paused\{reason="insufficient_funds"\} 0$/m);

    sandbox.setFaults({ down: false });
    const ids = commands.map((c) => c.commandId);
    const got = await results.waitFor(ids, 60_000);
    await eventually(() => (worker.pauseReason === undefined ? true : undefined), 10_000, 'the circuit to close');
    const resumed = await (await fetch(`http://127.0.0.1:${worker.httpPort}/metrics`)).text();
    expect(resumed).toMatch(/^sms_worker_paused\{reason="circuit_open"\} 0$/m);

    // Exactly one committed result per command: the worker committed six, and each id has one.
    await worker.stop();
    stopped = true;
    const committed = await metricTotal(worker, 'results');
    expect(committed).toBe(commands.length);
    expect(ids.map((id) => results.byCommand.get(id)?.length)).toEqual(ids.map(() => 1));

    const failed = ids.filter((id) => got.get(id)?.outcome === 'FAILED');
    const sent = ids.filter((id) => got.get(id)?.outcome === 'SENT');
    // Below the threshold an outage failure fails its command; from the threshold on, commands are held.
    expect(failed.length).toBeLessThanOrEqual(threshold - 1);
    expect(sent.length).toBe(commands.length - failed.length);
    for (const id of failed) {
      expect(got.get(id)?.error?.retryable).toBe(true);
      expect(sandbox.state.acceptedSends(id)).toBe(0);
    }
    for (const id of sent) expect(sandbox.state.acceptedSends(id)).toBe(1);
  });

  it('probes again when the command that opened the circuit was not kept (nobody waiting at the gate)', async () => {
    const topics = testTopics();
    const { worker } = await startTestWorker(workerEnv(topics, sandbox.url, { BREAKER_FAILURE_THRESHOLD: '1', PROVIDER_RETRY_ATTEMPTS: '1' }));
    cleanups.add(() => worker.stop());
    const publisher = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => publisher.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    // A single 500 is ambiguous: with PROVIDER_RETRY_AMBIGUOUS=false its command ends UNKNOWN (it may
    // have been sent, so it is not sent again) although it opens the circuit; the service is healthy afterwards.
    sandbox.state.faults.enqueue('http500');
    const first = textCommand();
    await publisher.publish([{ command: first }]);
    const firstResult = (await results.waitFor([first.commandId])).get(first.commandId);
    expect(firstResult?.outcome).toBe('UNKNOWN');
    expect(firstResult?.error).toMatchObject({ code: 'PROVIDER_HTTP_500', stage: 'PROVIDER', retryable: false });
    await eventually(() => (worker.pauseReason === 'circuit_open' ? true : undefined), 10_000, 'the circuit to open');

    const second = textCommand();
    await publisher.publish([{ command: second }]);
    expect((await results.waitFor([second.commandId], 20_000)).get(second.commandId)?.outcome).toBe('SENT');
    await eventually(() => (worker.pauseReason === undefined ? true : undefined), 10_000, 'the circuit to close');
  });

  it('with a priority topic, fetches both topics again once a held command has closed the circuit', async () => {
    const topics = testTopics();
    const priorityTopic = `${topics.commands}.priority`;
    const { worker } = await startTestWorker(
      workerEnv(topics, sandbox.url, { PRIORITY_COMMAND_TOPIC: priorityTopic, BREAKER_FAILURE_THRESHOLD: '2', PROVIDER_RETRY_ATTEMPTS: '1' }),
    );
    cleanups.add(() => worker.stop());
    const normal = await publisherFor(testKafka(), topics.commands);
    cleanups.add(() => normal.disconnect());
    const high = await publisherFor(testKafka(), priorityTopic);
    cleanups.add(() => high.disconnect());
    const results = await ResultCollector.start(topics.results);
    cleanups.add(() => results.stop());

    // Commands held at the closed gate make the probe themselves: the gate never asks for one.
    sandbox.setFaults({ down: true });
    const held = Array.from({ length: 6 }, () => textCommand());
    await normal.publish(held.map((command) => ({ command })));
    await eventually(() => (worker.pauseReason === 'circuit_open' ? true : undefined), 60_000, 'the circuit to open');
    sandbox.setFaults({ down: false });
    await results.waitFor(
      held.map((c) => c.commandId),
      60_000,
    );
    await eventually(() => (worker.pauseReason === undefined ? true : undefined), 10_000, 'the circuit to close');

    // Both topics are fetched again: commands published now, on either, are answered.
    const later = { normal: textCommand(), high: textCommand() };
    await normal.publish([{ command: later.normal }]);
    await high.publish([{ command: later.high }]);
    const got = await results.waitFor([later.high.commandId, later.normal.commandId], 20_000);
    expect([got.get(later.high.commandId)?.outcome, got.get(later.normal.commandId)?.outcome]).toEqual(['SENT', 'SENT']);
  });
});
