/**
 * The HTTP leg's ceiling (issue 12, item 3): the project's provider client alone
 * (bench/pipelines/client-only.ts, its own process, no Kafka) against the same sandbox at 0 ms,
 * next to the worker's drain at 0 ms: how much of the HTTP leg's throughput the worker reaches, and
 * what a command costs it in CPU beyond the HTTP call.
 */
import { join } from 'node:path';
import { fmt } from './markdown.ts';
import { REPO_ROOT, startNode } from './proc.ts';

export const WORKER_SHARE_TARGET = 0.8;
export const CPU_RATIO_TARGET = 1.3;

export interface ClientOnlyFigures {
  readonly requests: number;
  readonly inFlight: number;
  readonly failures: number;
  readonly seconds: number;
  readonly perSecond: number;
  readonly cpuUsPerRequest: number;
}

export async function runClientOnly(options: { providerUrl: string; requests: number; inFlight: number; seed: number }): Promise<ClientOnlyFigures> {
  const child = startNode(join(REPO_ROOT, 'bench', 'pipelines', 'client-only.ts'), [], {
    BENCH_PROVIDER_URL: options.providerUrl,
    BENCH_REQUESTS: String(options.requests),
    BENCH_IN_FLIGHT: String(options.inFlight),
    BENCH_SEED: String(options.seed),
  });
  const exit = await child.exited;
  const line = child.lines.find((l) => l.startsWith('{"pipeline":"client-only"'));
  if (exit.code !== 0 || line === undefined) throw new Error(`client-only exited with ${exit.code ?? exit.signal}:\n${child.output()}`);
  return JSON.parse(line) as ClientOnlyFigures;
}

/** The report's lines: client alone vs the worker's drain at 0 ms (undefined when the run had none). */
export function httpLegLines(client: ClientOnlyFigures, worker: { perSecond: number; cpuUsPerCommand: number } | undefined): string[] {
  const lines = [
    `HTTP leg at 0 ms: the provider client alone, ${client.inFlight} in flight, ${fmt(client.requests)} requests: ${fmt(client.perSecond)} req/s, ${fmt(client.cpuUsPerRequest)} CPU-µs/req${client.failures > 0 ? ` (${client.failures} failed)` : ''}.`,
  ];
  if (worker === undefined) {
    lines.push('- worker at 0 ms: not run (add 0 to --latencies and worker to --pipelines)');
    return lines;
  }
  const share = worker.perSecond / client.perSecond;
  const cpu = worker.cpuUsPerCommand / client.cpuUsPerRequest;
  lines.push(
    `- worker ÷ client throughput = ${fmt(100 * share)}% (${fmt(worker.perSecond)} cmd/s; target ≥ ${fmt(100 * WORKER_SHARE_TARGET)}%): ${share >= WORKER_SHARE_TARGET ? 'MET' : 'NOT MET'}`,
    `- worker CPU-µs/cmd ÷ client CPU-µs/req = ${fmt(cpu, 2)}× (${fmt(worker.cpuUsPerCommand)} vs ${fmt(client.cpuUsPerRequest)}; target ≤ ${CPU_RATIO_TARGET}×): ${cpu <= CPU_RATIO_TARGET ? 'MET' : 'NOT MET'}`,
  );
  return lines;
}
