/**
 * How busy the whole machine was over a window: the share of all cores' time not idle, from the
 * first line of /proc/stat. On the two cores these benchmarks run on, the broker, the registry, the
 * sandbox, the harness and every worker share the CPU, and a tail of seconds can be the machine
 * saturated rather than anything a worker waited for (the rolling update's steady phase, 3
 * workers at 300 commands/s, kept both cores 95–100% busy: bench/README.md). Each change phase's
 * line names the share, so a reader can tell the two apart.
 */
import { readFileSync } from 'node:fs';
import { fmt } from './markdown.ts';

/** The machine's load over a window: the busy share of all cores' time, and how many cores. */
export interface MachineLoad {
  readonly busyShare: number;
  readonly cores: number;
}

/** A report's note on the machine's load (empty when it was not measured). */
export function machineNote(machine: MachineLoad | undefined): string {
  if (machine === undefined || Number.isNaN(machine.busyShare)) return '';
  return `; the machine's CPU ${fmt(100 * machine.busyShare)}% busy (all ${machine.cores} cores, every process of the run)`;
}

/** Cumulative CPU time of all cores, in clock ticks, at one instant. */
export interface MachineCpuSample {
  readonly at: number;
  readonly busyTicks: number;
  readonly totalTicks: number;
}

/**
 * Busy and total ticks from /proc/stat's aggregate `cpu` line: user nice system idle iowait irq
 * softirq steal (guest time is already inside user and nice). Idle is idle + iowait; steal counts
 * as busy, since the machine's work could not run then.
 */
export function parseProcStat(text: string): { readonly busyTicks: number; readonly totalTicks: number; readonly cores: number } {
  const lines = text.split('\n');
  const aggregate = lines.find((line) => line.startsWith('cpu '));
  if (aggregate === undefined) throw new Error('/proc/stat has no aggregate cpu line');
  const fields = aggregate.trim().split(/\s+/).slice(1, 9).map(Number);
  if (fields.length < 4 || fields.some((f) => !Number.isFinite(f))) throw new Error(`unexpected /proc/stat cpu line: ${aggregate}`);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = fields;
  const idleTicks = idle + iowait;
  const totalTicks = user + nice + system + idleTicks + irq + softirq + steal;
  return { busyTicks: totalTicks - idleTicks, totalTicks, cores: lines.filter((line) => /^cpu\d+\s/.test(line)).length };
}

/**
 * The busy share (0–1) between two instants: from the last sample at or before `from` to the first
 * at or after `to`, so the window measured covers the one asked for (by at most a sampling
 * interval on each side). NaN without samples on both sides or without ticks between them.
 */
export function busyShareBetween(samples: readonly MachineCpuSample[], from: number, to: number): number {
  let start: MachineCpuSample | undefined;
  let end: MachineCpuSample | undefined;
  for (const s of samples) {
    if (s.at <= from) start = s;
    if (s.at >= to && end === undefined) end = s;
  }
  if (start === undefined || end === undefined || end.totalTicks <= start.totalTicks) return Number.NaN;
  return (end.busyTicks - start.busyTicks) / (end.totalTicks - start.totalTicks);
}

/** Samples /proc/stat every `intervalMs` while a run lasts. */
export class MachineCpuSampler {
  readonly samples: MachineCpuSample[] = [];
  readonly cores: number;
  readonly #timer: NodeJS.Timeout;

  constructor(intervalMs = 250) {
    this.cores = parseProcStat(readFileSync('/proc/stat', 'utf8')).cores;
    this.sample();
    this.#timer = setInterval(() => this.sample(), intervalMs);
    this.#timer.unref();
  }

  sample(): void {
    const { busyTicks, totalTicks } = parseProcStat(readFileSync('/proc/stat', 'utf8'));
    this.samples.push({ at: Date.now(), busyTicks, totalTicks });
  }

  stop(): void {
    this.sample();
    clearInterval(this.#timer);
  }

  busyShare(from: number, to: number): number {
    return busyShareBetween(this.samples, from, to);
  }
}
