import http, { type IncomingMessage, type Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { header, listen, readCappedBody, type BodyRead } from '../src/http-io.ts';
import { useCleanups } from './helpers/fixtures.ts';

const cleanups = useCleanups();

/** Closed after the test, its connections dropped. */
function closedAfter(server: Server): void {
  cleanups.add(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
}

/** A loopback server that reads each body with `read` and answers with what it got. */
async function serve(read: (req: IncomingMessage) => Promise<BodyRead>): Promise<{ port: number; reads: BodyRead[] }> {
  const reads: BodyRead[] = [];
  const server = http.createServer((req, res) => {
    void read(req).then((body) => {
      reads.push(body);
      if (body.kind === 'aborted') return;
      if (body.kind === 'too-large' && !body.drained) res.once('finish', () => req.destroy());
      res.writeHead(body.kind === 'body' ? 200 : 413).end(body.kind === 'body' ? body.bytes : '');
    });
  });
  closedAfter(server);
  const address = await listen(server, 0, '127.0.0.1');
  expect(address.host).toBe('127.0.0.1');
  return { port: address.port, reads };
}

async function post(port: number, body: Buffer): Promise<{ status: number; text: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body });
  return { status: response.status, text: await response.text() };
}

describe('readCappedBody', () => {
  it('returns a body up to the limit whole', async () => {
    const { port, reads } = await serve((req) => readCappedBody(req, 10));
    expect(await post(port, Buffer.from('0123456789'))).toEqual({ status: 200, text: '0123456789' });
    expect(await post(port, Buffer.alloc(0))).toEqual({ status: 200, text: '' });
    expect(reads.map((r) => r.kind)).toEqual(['body', 'body']);
  });

  it('reports a longer body as too large, drained to its end by default', async () => {
    const { port, reads } = await serve((req) => readCappedBody(req, 10));
    expect((await post(port, Buffer.alloc(1_000_000, 1))).status).toBe(413);
    expect(reads).toEqual([{ kind: 'too-large', drained: true }]);
  });

  it('stops reading past drainBytes and says the connection must be cut', async () => {
    const { port, reads } = await serve((req) => readCappedBody(req, 10, 40));
    // The client may see the 413 or the cut, depending on how much it had written.
    await post(port, Buffer.alloc(1_000_000, 1)).catch(() => undefined);
    expect(reads).toEqual([{ kind: 'too-large', drained: false }]);
  });

  it('reports a client that went away mid-body as aborted', async () => {
    const { port, reads } = await serve((req) => readCappedBody(req, 1_000));
    const request = http.request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-length': '100' } });
    request.on('error', () => undefined);
    request.write('only part of it');
    await new Promise((resolve) => setTimeout(resolve, 50));
    request.destroy();
    await expect.poll(() => reads).toEqual([{ kind: 'aborted' }]);
  });
});

describe('listen', () => {
  it('rejects when the port is taken', async () => {
    const { port } = await serve((req) => readCappedBody(req, 1));
    const second = http.createServer();
    await expect(listen(second, port, '127.0.0.1')).rejects.toThrow(/EADDRINUSE/);
  });

  it('brackets an IPv6 address', async () => {
    const server = http.createServer();
    closedAfter(server);
    const address = await listen(server, 0, '::1').catch(() => undefined);
    // A machine without IPv6 loopback cannot tell.
    if (address !== undefined) expect(address.host).toBe('[::1]');
  });
});

describe('header', () => {
  it('takes the first of repeated values', () => {
    expect(header(['a', 'b'])).toBe('a');
    expect(header('a')).toBe('a');
    expect(header(undefined)).toBeUndefined();
  });
});
