import { spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startTracing } from '../../src/observability/tracing.ts';
import { eventually } from '../../tools/poll.ts';

const saved = { ...process.env };
afterEach(() => {
  for (const key of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_BSP_SCHEDULE_DELAY']) {
    if (saved[key] === undefined) delete process.env[key];
    else process.env[key] = saved[key];
  }
});

describe('the tracing SDK', () => {
  it('is not started without an endpoint', async () => {
    expect(await startTracing({ enabled: false, why: 'no endpoint' }, pino({ level: 'silent' }), 'sms-worker')).toBeUndefined();
  });

  it('is not even loaded by the worker’s modules: the SDK, the resources and the exporter come in only when tracing starts', () => {
    // A fresh process records every package it resolves while it imports what `run` runs.
    const script = `
      import { registerHooks } from 'node:module';
      const seen = new Set();
      registerHooks({ resolve(specifier, context, next) { if (specifier.startsWith('@opentelemetry/')) seen.add(specifier); return next(specifier, context); } });
      await import(${JSON.stringify(new URL('../../src/worker/worker.ts', import.meta.url).href)});
      console.log(JSON.stringify([...seen].sort()));
    `;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.status, child.stderr).toBe(0);
    const loaded = JSON.parse(child.stdout.trim().split('\n').at(-1) ?? '[]') as string[];
    expect(loaded).toContain('@opentelemetry/api');
    expect(loaded.filter((m) => /sdk-trace|exporter|resources/.test(m))).toEqual([]);
  });

  it('a collector that refuses every export costs one warn line, not one per failed export', async () => {
    let requests = 0;
    const collector = createServer((req, res) => {
      requests += 1;
      req.resume().on('end', () => res.writeHead(500).end());
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    process.env['OTEL_BSP_SCHEDULE_DELAY'] = '10';
    const tracing = await startTracing({ enabled: true, endpoint: 'loopback', sampler: 'parentbased_always_on' }, log, 'sms-worker');
    try {
      await eventually(
        () => {
          tracing?.tracer.startSpan('x').end();
          return requests >= 3 ? true : undefined;
        },
        10_000,
        'three refused exports',
      );
      await tracing?.shutdown();
    } finally {
      collector.closeAllConnections();
      await new Promise((resolve) => collector.close(resolve));
    }
    const warnings = lines.filter((line) => line.includes('tracing: exporting spans failed'));
    expect(warnings).toHaveLength(1);
    expect(lines.some((line) => line.includes('tracing: exporting spans over OTLP/HTTP'))).toBe(true);
  });
});
