/**
 * A TCP proxy in front of the shared test broker that a test can take down and bring back: the
 * way to make "Kafka unreachable" for one client without stopping the broker other tests use.
 * Pair it with `proxiedSocketFactory`, so every connection the client opens (the seed broker and
 * the advertised address it learns from metadata) goes through the proxy.
 */
import net from 'node:net';
import type { ISocketFactory } from 'kafkajs';

export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #listenHost: string;
  readonly #sockets = new Set<net.Socket>();
  readonly #pairs = new Set<readonly [net.Socket, net.Socket]>();
  #server: net.Server | undefined;
  #port = 0;

  private constructor(target: { host: string; port: number }, listenHost: string) {
    this.#target = target;
    this.#listenHost = listenHost;
  }

  /** Starts listening on a free port of `listenHost` (IPv4 loopback, or `::1`), forwarding to `target` ("host:port"). */
  static async start(target: string, listenHost = '127.0.0.1'): Promise<TcpProxy> {
    const index = target.lastIndexOf(':');
    const proxy = new TcpProxy({ host: target.slice(0, index), port: Number(target.slice(index + 1)) }, listenHost);
    await proxy.open();
    return proxy;
  }

  get port(): number {
    return this.#port;
  }

  /** Listens again (on the same port after the first time). */
  async open(): Promise<void> {
    if (this.#server !== undefined) return;
    const server = net.createServer((client) => {
      const upstream = net.connect(this.#target);
      this.#sockets.add(client).add(upstream);
      const pair = [client, upstream] as const;
      this.#pairs.add(pair);
      const drop = (): void => {
        client.destroy();
        upstream.destroy();
        this.#sockets.delete(client);
        this.#sockets.delete(upstream);
        this.#pairs.delete(pair);
      };
      client.on('error', drop).on('close', drop);
      upstream.on('error', drop).on('close', drop);
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.#port, this.#listenHost, () => resolve());
    });
    this.#port = (server.address() as net.AddressInfo).port;
    this.#server = server;
  }

  /** Kafka "hangs": every open connection stays open, but nothing more passes either way (requests go unanswered). */
  freeze(): void {
    for (const [client, upstream] of this.#pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Kafka "goes down": no new connections (refused), and every open one is cut. */
  async close(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

/** A kafkajs socketFactory that connects every broker address to the proxy. */
export function proxiedSocketFactory(proxy: TcpProxy): ISocketFactory {
  return ({ onConnect }) => {
    const socket = net.connect({ host: '127.0.0.1', port: proxy.port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    return socket;
  };
}
