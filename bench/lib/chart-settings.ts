/**
 * The Helm chart's memory-related defaults, read from `helm/sms-worker/values.yaml` (never
 * copied), as the environment the bench gives a worker "with the chart's settings": the memory
 * limit, NODE_OPTIONS with the heap cap the chart derives from it and the young generation's
 * semi-space (the same arithmetic as
 * `sms-worker.nodeOptions` in templates/_helpers.tpl), and the fetch sizes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO_ROOT } from './proc.ts';

export interface ChartMemorySettings {
  /** resources.limits.memory as written, and in bytes. */
  readonly memoryLimit: string;
  readonly memoryLimitBytes: number;
  readonly heapPercentOfMemoryLimit: number;
  /** --max-old-space-size in MiB, or undefined when the chart renders no cap. */
  readonly maxOldSpaceMiB: number | undefined;
  /** The worker's environment for these settings (NODE_OPTIONS, HEAP_GROWING_PERCENT and the fetch sizes). */
  readonly env: Record<string, string>;
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** A Kubernetes memory quantity in bytes (the suffixes the chart's helper understands). */
export function memoryQuantityBytes(quantity: string): number {
  const match = /^(\d+)(|k|M|G|Ki|Mi|Gi)$/.exec(quantity);
  if (match === null) throw new Error(`memory quantity ${quantity} is not one of <n>, <n>k/M/G, <n>Ki/Mi/Gi`);
  return Number(match[1]) * (UNITS[match[2] as string] as number);
}

export function chartMemorySettings(valuesFile = join(REPO_ROOT, 'helm', 'sms-worker', 'values.yaml')): ChartMemorySettings {
  const values = parse(readFileSync(valuesFile, 'utf8')) as {
    resources?: { limits?: { memory?: string | number } };
    heapPercentOfMemoryLimit?: number;
    semiSpaceMiB?: number;
    heapGrowingPercent?: number;
    kafka?: { fetchMaxBytesPerPartition?: number; fetchMaxBytes?: number };
  };
  const memoryLimit = String(values.resources?.limits?.memory ?? '');
  if (memoryLimit === '') throw new Error(`${valuesFile}: resources.limits.memory is not set`);
  const memoryLimitBytes = memoryQuantityBytes(memoryLimit);
  const percent = values.heapPercentOfMemoryLimit ?? 0;
  // Integer MiB first, then the percentage, as the template's `div (mul limit percent) 100`.
  const maxOldSpaceMiB = percent > 0 ? Math.floor((Math.floor(memoryLimitBytes / 1024 ** 2) * percent) / 100) : undefined;
  const env: Record<string, string> = {};
  const semiSpace = values.semiSpaceMiB ?? 0;
  if (maxOldSpaceMiB !== undefined) env['NODE_OPTIONS'] = `--max-old-space-size=${maxOldSpaceMiB}${semiSpace > 0 ? ` --max-semi-space-size=${semiSpace}` : ''}`;
  if (values.heapGrowingPercent !== undefined) env['HEAP_GROWING_PERCENT'] = String(values.heapGrowingPercent);
  if (values.kafka?.fetchMaxBytesPerPartition !== undefined) env['KAFKA_FETCH_MAX_BYTES_PER_PARTITION'] = String(values.kafka.fetchMaxBytesPerPartition);
  if (values.kafka?.fetchMaxBytes !== undefined) env['KAFKA_FETCH_MAX_BYTES'] = String(values.kafka.fetchMaxBytes);
  return { memoryLimit, memoryLimitBytes, heapPercentOfMemoryLimit: percent, maxOldSpaceMiB, env };
}

/**
 * The chart's pod settings that decide how a change plays out (issue 23): how long a SIGTERMed
 * worker may take before the kubelet's SIGKILL, and when the kubelet first sees a new pod ready.
 */
export interface ChartPodSettings {
  /** SHUTDOWN_TIMEOUT_MS as the chart renders it (shutdownTimeoutSeconds × 1000). */
  readonly shutdownTimeoutMs: number;
  /** terminationGracePeriodSeconds in ms: explicit, or shutdownTimeoutSeconds + 15 (the chart's helper). */
  readonly terminationGraceMs: number;
  /** readinessProbe: the first probe after initialDelaySeconds, then one every periodSeconds. */
  readonly readinessInitialDelayMs: number;
  readonly readinessPeriodMs: number;
  /** The worker's environment for these settings, with the chart's memory settings (chartMemorySettings). */
  readonly env: Record<string, string>;
}

export function chartPodSettings(valuesFile = join(REPO_ROOT, 'helm', 'sms-worker', 'values.yaml')): ChartPodSettings {
  const values = parse(readFileSync(valuesFile, 'utf8')) as {
    shutdownTimeoutSeconds?: number;
    terminationGracePeriodSeconds?: number | null;
    readinessProbe?: { initialDelaySeconds?: number; periodSeconds?: number };
  };
  const shutdown = values.shutdownTimeoutSeconds ?? 30;
  const grace = values.terminationGracePeriodSeconds ?? shutdown + 15;
  return {
    shutdownTimeoutMs: shutdown * 1000,
    terminationGraceMs: grace * 1000,
    // Kubernetes' own defaults when the chart sets none: no delay, every 10 s.
    readinessInitialDelayMs: (values.readinessProbe?.initialDelaySeconds ?? 0) * 1000,
    readinessPeriodMs: (values.readinessProbe?.periodSeconds ?? 10) * 1000,
    // The memory settings too: a pod under the chart's heap cap is what a deploy changes.
    env: { ...chartMemorySettings(valuesFile).env, SHUTDOWN_TIMEOUT_MS: String(shutdown * 1000) },
  };
}
