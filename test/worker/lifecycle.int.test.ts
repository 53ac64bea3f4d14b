import { describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../src/config/index.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { pino } from 'pino';
import { useSandbox } from '../helpers/fixtures.ts';
import { SilentServer } from '../helpers/silent-server.ts';
import { startStalledRegistryProxy } from '../helpers/registry-proxy.ts';
import { START_STEPS } from '../../src/worker/start-steps.ts';
import { Worker } from '../../src/worker/worker.ts';
import { testKafka, withAdmin } from '../helpers/kafka.ts';
import { testTopics, workerEnv } from '../helpers/worker.ts';

const sandbox = useSandbox();

describe('worker lifecycle', () => {
  it('a stop() during start() wins: start gives up, everything is released, the worker never joins the group', async () => {
    const topics = testTopics();
    const config = loadConfig(workerEnv(topics, sandbox.url));
    const worker = new Worker({ config, logger: createLogger('silent') });
    const starting = worker.start();
    const stopping = worker.stop();
    await expect(starting).rejects.toThrow(/stopped while starting/);
    await stopping;
    await expect(worker.done).resolves.toBeUndefined();
    expect(worker.health().ready().ok).toBe(false);
    // Had start() carried on, its consumer would join the group after the stop.
    await new Promise((r) => setTimeout(r, 3_000));
    const members = await withAdmin(testKafka(), async (admin) => (await admin.describeGroups([topics.group])).groups[0]?.members.length ?? 0);
    expect(members).toBe(0);
  });

  it('a start that waits says so at warn, naming its step (a broker that accepts connections and never answers)', async () => {
    const silent = await SilentServer.start();
    const logs: { level: number; msg: string; step?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as { level: number; msg: string; step?: string }) });
    const config = loadConfig(workerEnv(testTopics(), sandbox.url, { KAFKA_BROKERS: `127.0.0.1:${silent.port}` }));
    const worker = new Worker({ config, logger, http: false, startWarnIntervalMs: 100 });
    const starting = worker.start().catch((error: unknown) => error);
    try {
      await silent.connected();
      await new Promise((r) => setTimeout(r, 500));
      const waiting = logs.filter((line) => line.msg === 'still starting');
      expect(waiting.length).toBeGreaterThanOrEqual(2);
      expect(waiting[0]).toMatchObject({ level: 40, step: START_STEPS.admin });
    } finally {
      // The stop releases what the start built; closing the server ends the requests it waits on.
      const stopping = worker.stop();
      await silent.close();
      await stopping;
      await starting;
    }
    // Once the start has ended, the warnings stop.
    const count = logs.filter((line) => line.msg === 'still starting').length;
    await new Promise((r) => setTimeout(r, 300));
    expect(logs.filter((line) => line.msg === 'still starting').length).toBe(count);
  });

  // CI once saw a worker logging only `still starting` for 90 s in a step that then covered Kafka,
  // the registry and the warm-up alike: the step now names the service the start waits on.
  it('a start held by a schema registry that accepts connections and never answers names the registry in its step', async () => {
    const silent = await SilentServer.start();
    const logs: { level: number; msg: string; step?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as { level: number; msg: string; step?: string }) });
    const config = loadConfig(workerEnv(testTopics(), sandbox.url, { SCHEMA_REGISTRY_URL: `http://127.0.0.1:${silent.port}` }));
    const worker = new Worker({ config, logger, http: false, startWarnIntervalMs: 100 });
    const starting = worker.start().catch((error: unknown) => error);
    try {
      await silent.connected(30_000);
      await new Promise((r) => setTimeout(r, 500));
      const steps = logs.filter((line) => line.msg === 'still starting').map((line) => line.step);
      expect(steps.at(-1)).toBe(START_STEPS.schemas);
    } finally {
      const stopping = worker.stop();
      await silent.close();
      await stopping;
      // The stop ended the start's registry retry: the start says it was stopped, not that the registry failed.
      expect(await starting).toMatchObject({ message: 'worker stopped while starting' });
    }
  });

  it('warns at start-up, naming them, when its topics have a partition of a single replica (a broker crash can lose their transaction markers)', async () => {
    const logs: { msg: string; topics?: string[] }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as { msg: string }) });
    const topics = testTopics();
    // The test stack has one broker: every topic the worker creates has one replica.
    const worker = new Worker({ config: loadConfig(workerEnv(topics, sandbox.url)), logger, http: false });
    try {
      await worker.start();
      const warned = logs.filter((l) => l.msg.startsWith('topics with a partition of a single replica'));
      expect(warned).toHaveLength(1);
      expect([...(warned[0]?.topics ?? [])].sort()).toEqual([topics.commands, topics.deadLetter, topics.ledger, topics.results].sort());
    } finally {
      await worker.stop();
    }
  });

  // CI once failed a start (and its test) on one registration past the registry's request
  // timeout while the suite loaded the machine: the start's registry calls are now retried.
  it('a start whose first registry request goes unanswered past its timeout (a registry stalled) asks again and starts', async () => {
    const proxy = await startStalledRegistryProxy(inject('schemaRegistryUrl'), 1);
    const logs: { msg: string; retryNumber?: number }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line) as { msg: string }) });
    const config = loadConfig(workerEnv(testTopics(), sandbox.url, { SCHEMA_REGISTRY_URL: proxy.url }));
    const worker = new Worker({ config, logger, http: false });
    try {
      await worker.start();
      expect(proxy.seen.filter((s) => s.held)).toHaveLength(1);
      const retries = logs.filter((l) => l.msg === 'schema registry call failed while starting; retrying');
      expect(retries.map((l) => l.retryNumber)).toEqual([1]);
      expect(worker.health().ready().detail).not.toMatch(/starting/);
    } finally {
      await worker.stop();
      await proxy.close();
    }
  });

  it('is disposable with `await using`', async () => {
    const topics = testTopics();
    const config = loadConfig(workerEnv(topics, sandbox.url));
    let disposed: Worker;
    {
      await using worker = new Worker({ config, logger: createLogger('silent') });
      disposed = worker;
      await worker.start();
    }
    await expect(disposed.done).resolves.toBeUndefined();
    expect(disposed.health().ready().detail).toMatch(/stopped/);
  });

  it('a graceful stop logs how long its lanes took to retire and commit, and then to leave the group (what the partitions’ next owners wait for)', async () => {
    const topics = testTopics();
    const logs: { msg: string; topic?: string; retiredMs?: unknown; leaveMs?: unknown }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line) as { msg: string }) });
    const worker = new Worker({ config: loadConfig(workerEnv(topics, sandbox.url)), logger, http: false });
    await worker.start();
    await worker.stop();
    const left = logs.filter((line) => line.msg.startsWith('left the group'));
    expect(left).toHaveLength(1);
    expect(left[0]?.topic).toBe(topics.commands);
    for (const step of [left[0]?.retiredMs, left[0]?.leaveMs]) {
      expect(typeof step).toBe('number');
      expect(step).toBeGreaterThanOrEqual(0);
    }
  });
});
