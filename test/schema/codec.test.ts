/**
 * The registry client as the worker makes it (createRegistry), against real HTTP on loopback: a
 * registry that accepts the connection and never answers fails the request after the worker's
 * timeout, instead of holding the caller (the start, a record's decoding) for ever.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Codec, createRegistry, withRegistryRetry } from '../../src/schema/codec.ts';
import { RetryAborted } from '../../src/retry.ts';
import { useCleanups } from '../helpers/fixtures.ts';

const cleanups = useCleanups();

/** A registry that takes every request and never answers it (or, from request `answerFrom` on, answers `status` with a message); counts the requests. */
async function silentRegistry(answerFrom = Infinity, status = 401): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((_request, response) => {
    requests += 1;
    if (requests >= answerFrom) {
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ error_code: status, message: `answered ${status}` }));
      return;
    }
    open.add(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.add(async () => {
    for (const response of open) response.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests };
}

describe('createRegistry', () => {
  it('gives up a request the registry never answers after its timeout', async () => {
    const registry = await silentRegistry();
    const started = Date.now();
    await expect(createRegistry(registry.url, undefined, 300).getSchema(1)).rejects.toThrow(/timeout/i);
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(250);
    // Given up, not retried until some other bound: one request.
    expect(registry.requests()).toBe(1);
  });

  it('so a start whose registry never answers fails (registering the result schemas) rather than waiting', async () => {
    const registry = await silentRegistry();
    await expect(Codec.create(createRegistry(registry.url, undefined, 300), { results: 'r', deadLetter: 'd' })).rejects.toThrow(/timeout/i);
  });
});

describe('withRegistryRetry (the start-up registry calls, and the result reader)', () => {
  it('asks again after a request past its timeout, and stops at a 401, which another attempt will not fix', async () => {
    const registry = await silentRegistry(2);
    const client = createRegistry(registry.url, undefined, 300);
    const retries: number[] = [];
    const failed = await withRegistryRetry(() => client.getSchema(1), { random: () => 0, onRetry: (_e, n) => retries.push(n) }).catch((e: unknown) => e);
    expect((failed as { status?: number }).status).toBe(401);
    expect(retries).toEqual([1]);
    expect(registry.requests()).toBe(2);
  });

  it('does not ask again what the registry answered (a compatibility rule set otherwise: 409)', async () => {
    const registry = await silentRegistry(1, 409);
    const client = createRegistry(registry.url, undefined, 300);
    const retries: number[] = [];
    const failed = await withRegistryRetry(() => client.getSchema(1), { random: () => 0, onRetry: (_e, n) => retries.push(n) }).catch((e: unknown) => e);
    expect((failed as { status?: number }).status).toBe(409);
    expect(retries).toEqual([]);
    expect(registry.requests()).toBe(1);
  });

  it('a stop while starting ends the wait between attempts at once', async () => {
    const registry = await silentRegistry();
    const client = createRegistry(registry.url, undefined, 200);
    const stop = new AbortController();
    const failing = withRegistryRetry(() => client.getSchema(1), { signal: stop.signal, onRetry: () => stop.abort() });
    await expect(failing).rejects.toBeInstanceOf(RetryAborted);
    // RetryAborted: the wait itself was ended, and no second request was made.
    expect(registry.requests()).toBe(1);
  });
});
