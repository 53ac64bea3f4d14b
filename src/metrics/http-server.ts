import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';

export interface HealthSource {
  /** Liveness: the consume loop is making progress, idle, or deliberately paused — not stuck. */
  live(): { ok: boolean; detail: string };
  /** Readiness: connected to Kafka, schemas resolved, group joined, first partitions claimed (producers ready). */
  ready(): { ok: boolean; detail: string };
}

/** `/metrics`, `/healthz`, `/readyz` on one port. */
export async function startHttpServer(options: {
  port: number;
  host?: string;
  registry: Registry;
  health: HealthSource;
}): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405).end();
      return;
    }
    if (path === '/metrics') {
      options.registry.metrics().then(
        (body) => response.writeHead(200, { 'content-type': options.registry.contentType }).end(body),
        () => response.writeHead(500).end('metrics unavailable\n'),
      );
      return;
    }
    if (path === '/healthz' || path === '/readyz') {
      const { ok, detail } = path === '/healthz' ? options.health.live() : options.health.ready();
      response.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain; charset=utf-8' }).end(`${detail}\n`);
      return;
    }
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found: try /metrics, /healthz, /readyz\n');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    server,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
