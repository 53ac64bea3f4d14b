/**
 * The HTTP leg's ceiling: the project's provider client (`createProviderClient`, as the worker
 * configures it: MAX_IN_FLIGHT sockets) alone, no Kafka, `BENCH_IN_FLIGHT` calls in flight against
 * the sandbox, the same command mix as the backlog. Prints one JSON line: requests per second and
 * this process's CPU-µs per request (process.cpuUsage, user + system) over the measured part,
 * after a warm-up of a tenth of the calls.
 *
 *   BENCH_PROVIDER_URL=… BENCH_REQUESTS=20000 BENCH_IN_FLIGHT=64 node bench/pipelines/client-only.ts
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_VALIDATION_POLICY, validateCommand } from '../../src/contracts/validate.ts';
import { createProviderClient } from '../../src/provider/client.ts';
import type { ProviderRequest } from '../../src/provider/types.ts';
import { kindAt, makeCommand, prng } from '../lib/commands.ts';

const need = (name: string): string => {
  const value = process.env[name];
  if (value === undefined || value === '') throw new Error(`${name} is required`);
  return value;
};
const providerUrl = need('BENCH_PROVIDER_URL');
const requests = Number(need('BENCH_REQUESTS'));
const inFlight = Number(need('BENCH_IN_FLIGHT'));
if (!Number.isInteger(requests) || requests < 10 || !Number.isInteger(inFlight) || inFlight < 1)
  throw new Error('BENCH_REQUESTS must be an integer ≥ 10 and BENCH_IN_FLIGHT ≥ 1');

// The requests the worker would send for the backlog's mix (invalid commands never reach HTTP).
const random = prng(Number(process.env['BENCH_SEED'] ?? '7'));
const pool: { request: ProviderRequest; correlationId: string }[] = [];
for (let i = 0; pool.length < Math.min(requests, 2_000); i += 1) {
  const command = makeCommand(`client-only-${i}`, kindAt(random), random);
  const validation = validateCommand(command, DEFAULT_VALIDATION_POLICY, Date.now());
  if (validation.kind === 'send') pool.push({ request: validation.request, correlationId: command.commandId });
}

const client = createProviderClient({ baseUrl: providerUrl, accessKeyId: 'bench-access-key', maxSockets: inFlight });
const warmUp = Math.floor(requests / 10);
let next = 0;
let failures = 0;
let measureFrom: { at: number; cpu: NodeJS.CpuUsage } | undefined;

async function lane(): Promise<void> {
  for (;;) {
    const n = next;
    if (n >= warmUp + requests) return;
    next += 1;
    if (n === warmUp) measureFrom = { at: performance.now(), cpu: process.cpuUsage() };
    const { request, correlationId } = pool[n % pool.length] as (typeof pool)[number];
    try {
      await client.send(request, { correlationId: `${correlationId}-${n}` });
    } catch {
      failures += 1;
    }
  }
}

await Promise.all(Array.from({ length: inFlight }, () => lane()));
const end = { at: performance.now(), cpu: process.cpuUsage(measureFrom?.cpu) };
client.close();
const seconds = (end.at - (measureFrom?.at ?? end.at)) / 1000;
console.log(
  JSON.stringify({
    pipeline: 'client-only',
    requests,
    inFlight,
    failures,
    seconds,
    perSecond: requests / seconds,
    cpuUsPerRequest: (end.cpu.user + end.cpu.system) / requests,
  }),
);
