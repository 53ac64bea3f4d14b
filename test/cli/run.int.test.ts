import { afterEach, describe, expect, it } from 'vitest';
import { SilentServer } from '../helpers/silent-server.ts';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { testTopics, workerEnv } from '../helpers/worker.ts';

const open: { worker?: WorkerProcess; silent?: SilentServer } = {};
afterEach(async () => {
  open.worker?.signal('SIGKILL');
  await open.worker?.exited;
  await open.silent?.close();
});

describe('sms-worker run: the forced exit', () => {
  it('exits 1 at SHUTDOWN_TIMEOUT_MS even while its start waits on a broker that never answers', async () => {
    const silent = (open.silent = await SilentServer.start());
    const env = workerEnv(testTopics(), 'http://127.0.0.1:9', { KAFKA_BROKERS: `127.0.0.1:${silent.port}`, SHUTDOWN_TIMEOUT_MS: '1000' });
    const worker = (open.worker = new WorkerProcess(env));
    // The start is under way, stuck on the silent broker's first answer.
    await silent.connected();
    const signalledAt = Date.now();
    worker.signal('SIGTERM');
    // kafkajs waits 30 s (its request timeout) for an answer before it tries again: without the
    // race in runWorker the process outlives both the timeout and this wait.
    const exit = await worker.stopped(10_000);
    expect(exit.code).toBe(1);
    expect(Date.now() - signalledAt).toBeLessThan(10_000);
    expect(worker.output).toContain('graceful shutdown timed out; forcing exit');
  });
});
