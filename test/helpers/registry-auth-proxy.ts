import { randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RegistryAuthProxy {
  readonly url: string;
  readonly username: string;
  readonly password: string;
  /** Requests answered so far, and whether each carried the right credentials. */
  readonly seen: readonly { path: string; authorized: boolean }[];
  close(): Promise<void>;
}

/**
 * The test stack's registry has no authentication; this loopback proxy in front of it demands HTTP
 * basic auth, as a production registry does (Apicurio enforces credentials only through an OIDC
 * server), and records whether each request carried them.
 */
export async function startRegistryAuthProxy(upstreamUrl: string): Promise<RegistryAuthProxy> {
  const upstream = new URL(upstreamUrl);
  const username = 'registry-user';
  const password = randomBytes(18).toString('base64url');
  const expected = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  const seen: { path: string; authorized: boolean }[] = [];
  const authorized = (headers: IncomingHttpHeaders): boolean => headers.authorization === expected;
  const server = createServer((req, res) => {
    const ok = authorized(req.headers);
    seen.push({ path: req.url ?? '', authorized: ok });
    if (!ok) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error_code":401,"message":"Unauthorized"}');
      return;
    }
    const forward = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: `${upstream.pathname.replace(/\/$/, '')}${req.url ?? ''}`,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    username,
    password,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
