import { createRequire } from 'node:module';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import '../../src/kafka/kafkajs.ts';
import { withDeadSocketGuard } from '../../src/kafka/dead-sockets.ts';
import { defaultSocketFactory } from '../../src/kafka/seed-brokers.ts';
import { freePort } from '../../tools/stack/processes.ts';

const require = createRequire(import.meta.url);

interface KafkaJsConnection {
  readonly socket: net.Socket;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
}

/** kafkajs's own Connection (network/connection.js) to a refused port, made with `socketFactory`. */
async function refusedConnection(socketFactory: typeof defaultSocketFactory): Promise<KafkaJsConnection> {
  const Connection = require('kafkajs/src/network/connection.js') as new (options: Record<string, unknown>) => KafkaJsConnection;
  const { createLogger, LEVELS } = require('kafkajs/src/loggers/index.js') as {
    createLogger: (options: { level: number; logCreator: () => () => void }) => unknown;
    LEVELS: { NOTHING: number };
  };
  const logger = createLogger({ level: LEVELS.NOTHING, logCreator: () => () => undefined });
  // A free port: nothing listens on it, so the connection is refused.
  const connection = new Connection({ host: '127.0.0.1', port: await freePort(), logger, socketFactory, requestTimeout: 1_000, connectionTimeout: 1_000 });
  await connection.connect().catch(() => undefined);
  return connection;
}

describe("a broker connection that never connected, disconnected at every retry (kafkajs's Connection.disconnect)", () => {
  it('adds no connect listener to its dead socket with the guarded factory', async () => {
    const connection = await refusedConnection(withDeadSocketGuard(defaultSocketFactory));
    expect(connection.socket.destroyed).toBe(true);
    // The listeners of the connect attempt itself stay; the disconnects add none.
    const before = connection.socket.listenerCount('connect');
    for (let i = 0; i < 12; i++) await connection.disconnect();
    expect(connection.socket.listenerCount('connect')).toBe(before);
  });

  it("piles one up per disconnect with kafkajs's own behaviour (what the guard is for)", async () => {
    const connection = await refusedConnection(defaultSocketFactory);
    const before = connection.socket.listenerCount('connect');
    connection.socket.setMaxListeners(20);
    for (let i = 0; i < 12; i++) await connection.disconnect();
    expect(connection.socket.listenerCount('connect') - before).toBe(12);
  });

  it('a live socket is still unref’d as before', async () => {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const { port } = server.address() as net.AddressInfo;
    try {
      const socket = withDeadSocketGuard(defaultSocketFactory)({ host: '127.0.0.1', port, ssl: false as never, onConnect: () => undefined });
      await new Promise((resolve) => socket.once('connect', resolve));
      expect(socket.unref()).toBe(socket);
      expect(socket.destroyed).toBe(false);
      socket.destroy();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
