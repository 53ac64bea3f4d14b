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

/** A loopback service that answers every request 401 without an envelope (a revoked key). */
export async function refusingService(): Promise<{ url: string; requests: () => number; close: () => Promise<void> }> {
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests += 1;
    req.resume();
    res.writeHead(401, { 'content-type': 'text/html' });
    res.end('<html>401 Authorization Required</html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    requests: () => requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
