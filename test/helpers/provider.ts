import http from 'node:http';
import type net from 'node:net';
import { ProviderError } from '../../src/provider/provider-error.ts';

/** The ProviderError a send fails with; anything else (or success) fails the test. */
export async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected the send to fail');
}

/** A loopback service that answers 401 without an envelope (a revoked key); what `refusingService` returns. */
export interface RefusingService {
  readonly url: string;
  /** Requests answered 401 so far. */
  requests: () => number;
  /** From now on forward every request to `target` (the key was fixed); without a target: refuse for good. */
  accept: () => void;
  close: () => Promise<void>;
}

/**
 * A loopback service that answers every request 401 without an envelope (a revoked key), until
 * `accept()`: from then on it passes each request through to `target` (e.g. the sandbox) unchanged.
 */
export async function refusingService(target?: string): Promise<RefusingService> {
  let requests = 0;
  let accepting = false;
  const server = http.createServer((req, res) => {
    if (accepting && target !== undefined) {
      const upstream = http.request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
      return;
    }
    requests += 1;
    req.resume();
    res.writeHead(401, { 'content-type': 'text/html' });
    res.end('<html>401 Authorization Required</html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests: () => requests,
    accept: () => {
      accepting = true;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
