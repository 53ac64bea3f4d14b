import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerProcess } from '../helpers/worker-process.ts';
import { testTopics, workerEnv } from '../helpers/worker.ts';

/** A TCP server that accepts connections and never answers: a start step against it never ends. */
async function silentServer(): Promise<{ server: Server; port: number; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, sockets };
}

const open: { worker?: WorkerProcess; silent?: Awaited<ReturnType<typeof silentServer>> } = {};
afterEach(async () => {
  open.worker?.signal('SIGKILL');
  await open.worker?.exited;
  for (const socket of open.silent?.sockets ?? []) socket.destroy();
  await new Promise((resolve) => open.silent?.server.close(resolve));
});

describe('sms-worker run: the forced exit', () => {
  it('exits 1 at SHUTDOWN_TIMEOUT_MS even while its start waits on a broker that never answers', async () => {
    open.silent = await silentServer();
    const env = workerEnv(testTopics(), 'http://127.0.0.1:9', { KAFKA_BROKERS: `127.0.0.1:${open.silent.port}`, SHUTDOWN_TIMEOUT_MS: '1000' });
    open.worker = new WorkerProcess(env);
    const worker = open.worker;
    // The start is under way, stuck on the silent broker's first answer.
    for (let i = 0; i < 200 && open.silent.sockets.size === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(open.silent.sockets.size).toBeGreaterThan(0);
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
