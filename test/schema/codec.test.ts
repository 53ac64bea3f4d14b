/**
 * The registry client as the worker makes it (createRegistry), against real HTTP on loopback: a
 * registry that accepts the connection and never answers fails the request after the worker's
 * timeout, instead of holding the caller (the start, a record's decoding) for ever.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Codec, createRegistry } from '../../src/schema/codec.ts';
import { useCleanups } from '../helpers/fixtures.ts';

const cleanups = useCleanups();

/** A registry that takes every request and never answers it; counts the requests. */
async function silentRegistry(): Promise<{ url: string; requests: () => number }> {
  let requests = 0;
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((_request, response) => {
    requests += 1;
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
