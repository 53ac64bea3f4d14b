import { createServer, type Socket } from 'node:net';

/** A TCP server on loopback that accepts connections and never answers: a client's request to it never ends. */
export class SilentServer {
  readonly sockets = new Set<Socket>();
  readonly #server = createServer((socket) => {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
  });
  #port = 0;

  get port(): number {
    return this.#port;
  }

  static async start(): Promise<SilentServer> {
    const silent = new SilentServer();
    await new Promise<void>((resolve) => silent.#server.listen(0, '127.0.0.1', resolve));
    const address = silent.#server.address();
    if (address === null || typeof address === 'string') throw new Error('the silent server has no port');
    silent.#port = address.port;
    return silent;
  }

  /** Resolves once a client has connected (polling every 50 ms, up to `timeoutMs`). */
  async connected(timeoutMs = 10_000): Promise<void> {
    for (const deadline = Date.now() + timeoutMs; this.sockets.size === 0;) {
      if (Date.now() > deadline) throw new Error(`nothing connected to the silent server within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
