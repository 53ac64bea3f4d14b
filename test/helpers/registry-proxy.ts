import { randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
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
    forward(upstream, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: urlOf(server), username, password, seen, close: () => closeServer(server) };
}

export interface StalledRegistryProxy {
  readonly url: string;
  /** Requests seen so far, and whether the proxy held each one unanswered (else it was forwarded). */
  readonly seen: readonly { path: string; held: boolean }[];
  close(): Promise<void>;
}

/**
 * A loopback proxy in front of the test stack's registry that takes its first `unansweredFirst`
 * requests and never answers them, as a registry stalled or overloaded does: the client gives each
 * up at its request timeout. (A 5xx or a cut connection would not do: the registry client retries
 * those itself, three times; a timeout it does not.)
 */
export async function startStalledRegistryProxy(upstreamUrl: string, unansweredFirst: number): Promise<StalledRegistryProxy> {
  const upstream = new URL(upstreamUrl);
  const seen: { path: string; held: boolean }[] = [];
  const server = createServer((req, res) => {
    const held = seen.length < unansweredFirst;
    seen.push({ path: req.url ?? '', held });
    // Held until the proxy closes (closeAllConnections ends it).
    if (held) return;
    forward(upstream, req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: urlOf(server), seen, close: () => closeServer(server) };
}

/** Passes a request on to the registry at `upstream` and its answer back (502 if it cannot be reached). */
export function forward(upstream: URL, req: IncomingMessage, res: ServerResponse): void {
  const forwarded = request(
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
  forwarded.on('error', () => res.writeHead(502).end());
  req.pipe(forwarded);
}

export const urlOf = (server: Server): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

export const closeServer = (server: Server): Promise<void> =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
