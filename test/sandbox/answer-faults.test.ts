import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { HUGE_BODY_PADDING_BYTES, MAX_ANSWER_FAULT_TARGETS, NEVER_ENDS_TRICKLE_MS, OVERFLOW_MESSAGE_COUNT } from '../../src/sandbox/answer-faults.ts';
import { startSandbox } from '../../src/sandbox/server.ts';
import { eventually } from '../../tools/poll.ts';
import { useSandbox } from '../helpers/fixtures.ts';

const TWO_CN = { to: ['+8613800138000', '+8613900139000'], signature: 'Acme', content: 'hi' };

interface Sent {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/** One text send over node:http (independent of the client under test), with its correlation id. */
function send(base: string, correlationId: string, body: unknown = TWO_CN): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}/?action=sms.message.send&accessKeyId=k`,
      { method: 'POST', headers: { 'content-type': 'application/json', 'x-correlation-id': correlationId }, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

async function admin(base: string, method: 'GET' | 'POST', body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}/_sandbox/answer-faults`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  return { status: response.status, body: (await response.json()) as unknown };
}

interface Report {
  messageCount: number;
  price: string;
}
interface Envelope {
  code: string;
  data: { messageCount: number; totalAmount: string; messages: Report[] };
}

const sandbox = useSandbox({}, { resetAfterEach: true });

describe('answer faults aimed at one command (real HTTP on loopback)', () => {
  it('count-overflow: messageCount 3000000000 in data and every report; the send is charged', async () => {
    sandbox.setAnswerFaults({ 'cmd-overflow': 'count-overflow' });
    const before = sandbox.state.balanceMicros;
    const answer = await send(sandbox.url, 'cmd-overflow');
    expect(answer.status).toBe(200);
    const envelope = JSON.parse(answer.body) as Envelope;
    expect(envelope.code).toBe('0');
    expect(envelope.data.messageCount).toBe(OVERFLOW_MESSAGE_COUNT);
    expect(envelope.data.messages.map((m) => m.messageCount)).toEqual([OVERFLOW_MESSAGE_COUNT, OVERFLOW_MESSAGE_COUNT]);
    expect(sandbox.state.acceptedSends('cmd-overflow')).toBe(1);
    expect(sandbox.state.balanceMicros).toBe(before - 90_000n);
  });

  it.each([
    ['price-nan', 'NaN'],
    ['price-negative', '-1'],
    ['price-400-digits', '9'.repeat(400)],
  ] as const)('%s: every report has price %s; amounts stay the real ones; the send is charged', async (kind, price) => {
    sandbox.setAnswerFaults({ [`cmd-${kind}`]: kind });
    const answer = await send(sandbox.url, `cmd-${kind}`);
    const envelope = JSON.parse(answer.body) as Envelope;
    expect(answer.status).toBe(200);
    expect(envelope.data.messages.map((m) => m.price)).toEqual([price, price]);
    expect(envelope.data.totalAmount).toBe('0.090000');
    expect(sandbox.state.acceptedSends(`cmd-${kind}`)).toBe(1);
  });

  it('an envelope fault leaves a refused send (400) alone: nothing to corrupt, nothing charged', async () => {
    sandbox.setAnswerFaults({ 'cmd-refused': 'price-nan' });
    const answer = await send(sandbox.url, 'cmd-refused', { ...TWO_CN, to: ['+86123'] });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toEqual({ code: '900301', message: expect.any(String) as string });
    expect(sandbox.state.acceptedSends('cmd-refused')).toBe(0);
  });

  it('huge-body: the real answer with 20 MiB of whitespace before its last brace, chunked, still JSON; charged', async () => {
    sandbox.setAnswerFaults({ 'cmd-huge': 'huge-body' });
    const answer = await send(sandbox.url, 'cmd-huge');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-length']).toBeUndefined();
    expect(answer.headers['transfer-encoding']).toBe('chunked');
    expect(answer.body.length).toBeGreaterThan(HUGE_BODY_PADDING_BYTES);
    const envelope = JSON.parse(answer.body) as Envelope;
    expect(envelope.data.messages).toHaveLength(2);
    expect(sandbox.state.acceptedSends('cmd-huge')).toBe(1);
  }, 30_000);

  it('never-ends: headers and half the answer, then a byte a second; logged and charged at once; close() ends it', async () => {
    const local = await startSandbox();
    local.setAnswerFaults({ 'cmd-never': 'never-ends' });
    const received: Buffer[] = [];
    let ended = false;
    let status = 0;
    const finished = new Promise<string>((resolve) => {
      const req = request(
        `${local.url}/?action=sms.message.send&accessKeyId=k`,
        { method: 'POST', headers: { 'content-type': 'application/json', 'x-correlation-id': 'cmd-never' }, agent: false },
        (res) => {
          status = res.statusCode ?? 0;
          res.on('data', (chunk: Buffer) => received.push(chunk));
          res.on('end', () => {
            ended = true;
            resolve('ended');
          });
          res.on('error', () => resolve('dropped'));
          res.on('aborted', () => resolve('dropped'));
        },
      );
      req.on('error', () => resolve('dropped'));
      req.end(JSON.stringify(TWO_CN));
    });
    try {
      // The trickle: at least two spaces after the prefix, and never a complete document.
      const text = await eventually(
        () => {
          const sofar = Buffer.concat(received).toString('utf8');
          return / {2,}$/.test(sofar) ? sofar : undefined;
        },
        NEVER_ENDS_TRICKLE_MS * 10,
        'two trickled bytes',
      );
      expect(status).toBe(200);
      expect(ended).toBe(false);
      expect(text.startsWith('{"code":"0"')).toBe(true);
      expect(() => JSON.parse(text) as unknown).toThrow();
      expect(local.state.requests({ correlationId: 'cmd-never' })).toMatchObject([{ httpStatus: 200, fault: 'never-ends', accepted: true }]);
      expect(local.state.acceptedSends('cmd-never')).toBe(1);
    } finally {
      await local.close();
    }
    expect(await finished).toBe('dropped');
  }, 15_000);

  it('a targeted request skips the random faults; every other request still gets them', async () => {
    sandbox.setFaults({ rates: { http500: 1 } });
    sandbox.setAnswerFaults({ 'cmd-target': 'price-negative' });
    const [targeted, other] = await Promise.all([send(sandbox.url, 'cmd-target'), send(sandbox.url, 'cmd-other')]);
    expect(targeted.status).toBe(200);
    expect((JSON.parse(targeted.body) as Envelope).data.messages[0]?.price).toBe('-1');
    expect(other.status).toBe(500);
  });

  it('every request of a target gets the fault and is counted; untargeted ids answer normally', async () => {
    sandbox.setAnswerFaults({ 'cmd-twice': 'count-overflow' });
    await send(sandbox.url, 'cmd-twice');
    await send(sandbox.url, 'cmd-twice');
    const plain = JSON.parse((await send(sandbox.url, 'cmd-plain')).body) as Envelope;
    expect(plain.data.messageCount).toBe(2);
    expect(sandbox.state.answerFaults.view().requests).toEqual({ 'cmd-twice': 2 });
    expect(sandbox.state.stats().faults).toEqual({ 'count-overflow': 2 });
  });
});

describe('/_sandbox/answer-faults', () => {
  it('sets, removes and clears targets, and reports request counts', async () => {
    expect(await admin(sandbox.url, 'POST', { set: { a: 'huge-body', b: 'never-ends', c: 'price-nan' } })).toEqual({
      status: 200,
      body: { targets: { a: 'huge-body', b: 'never-ends', c: 'price-nan' }, requests: {} },
    });
    await send(sandbox.url, 'c');
    expect((await admin(sandbox.url, 'POST', { remove: ['a'] })).body).toEqual({ targets: { b: 'never-ends', c: 'price-nan' }, requests: { c: 1 } });
    expect((await admin(sandbox.url, 'POST', { clear: true, set: { d: 'price-negative' } })).body).toEqual({ targets: { d: 'price-negative' }, requests: {} });
    expect((await admin(sandbox.url, 'GET')).body).toEqual({ targets: { d: 'price-negative' }, requests: {} });
  });

  it('refuses an unknown kind, and more targets than the bound, applying nothing', async () => {
    const unknown = await admin(sandbox.url, 'POST', { set: { a: 'explode' } });
    expect(unknown.status).toBe(400);
    const many = Object.fromEntries(Array.from({ length: MAX_ANSWER_FAULT_TARGETS + 1 }, (_, i) => [`id-${i}`, 'price-nan']));
    const tooMany = await admin(sandbox.url, 'POST', { set: many });
    expect(tooMany.status).toBe(400);
    expect(JSON.stringify(tooMany.body)).toContain(`at most ${MAX_ANSWER_FAULT_TARGETS} targets`);
    expect((await admin(sandbox.url, 'GET')).body).toEqual({ targets: {}, requests: {} });
  });

  it('POST /_sandbox/reset clears the targets', async () => {
    sandbox.setAnswerFaults({ x: 'huge-body' });
    await fetch(`${sandbox.url}/_sandbox/reset`, { method: 'POST' });
    expect(sandbox.state.answerFaults.view().targets).toEqual({});
  });
});
