/**
 * Child processes and what they cost: CPU time and peak RSS read from /proc/<pid> by the
 * orchestrator, so the three pipelines (two bench scripts and the shipped CLI) are measured the
 * same way, and nothing of the orchestrator's or the sandbox's own work is charged to them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const REPO_ROOT = join(import.meta.dirname, '..', '..');
export const CLI_MAIN = join(REPO_ROOT, 'src', 'cli', 'main.ts');

const TICKS_PER_SECOND = 100; // sysconf(_SC_CLK_TCK) on Linux

/** User + system CPU of a live process in µs (10 ms resolution), or undefined once it is gone. */
export function cpuMicros(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // After "pid (comm) ": state is field 0; utime and stime are fields 11 and 12.
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1_000_000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

/** Peak resident set size (VmHWM) of a live process in bytes. */
export function peakRssBytes(pid: number): number | undefined {
  try {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match === null ? undefined : Number(match[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Samples a process's CPU time every `intervalMs`, to charge CPU to a time window afterwards. */
export class CpuSampler {
  readonly samples: { at: number; cpuUs: number }[] = [];
  readonly #pid: number;
  readonly #timer: NodeJS.Timeout;

  constructor(pid: number, intervalMs = 100) {
    this.#pid = pid;
    this.sample();
    this.#timer = setInterval(() => this.sample(), intervalMs);
  }

  sample(): void {
    const cpuUs = cpuMicros(this.#pid);
    if (cpuUs !== undefined) this.samples.push({ at: Date.now(), cpuUs });
  }

  stop(): void {
    this.sample();
    clearInterval(this.#timer);
  }

  /** CPU µs spent between two instants, interpolating between samples. */
  between(from: number, to: number): number {
    return this.#at(to) - this.#at(from);
  }

  #at(time: number): number {
    const s = this.samples;
    if (s.length === 0) return 0;
    const first = s[0] as { at: number; cpuUs: number };
    if (time <= first.at) return first.cpuUs;
    for (let i = 1; i < s.length; i += 1) {
      const b = s[i] as { at: number; cpuUs: number };
      if (time <= b.at) {
        const a = s[i - 1] as { at: number; cpuUs: number };
        const share = b.at === a.at ? 1 : (time - a.at) / (b.at - a.at);
        return a.cpuUs + share * (b.cpuUs - a.cpuUs);
      }
    }
    return (s[s.length - 1] as { at: number; cpuUs: number }).cpuUs;
  }
}

export interface Child {
  readonly process: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 20 kB of stdout and stderr, for diagnostics. */
  output(): string;
  /** Lines written to stdout so far. */
  readonly lines: string[];
}

/** Every child still running: an interrupted run (Ctrl-C) must not leave workers or sandboxes behind. */
const running = new Set<ChildProcess>();
let reaperInstalled = false;

function installReaper(): void {
  if (reaperInstalled) return;
  reaperInstalled = true;
  const killAll = (): void => {
    for (const child of running) child.kill('SIGKILL');
  };
  process.once('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** Starts `node <script> …args` with the same Node binary as this process. */
export function startNode(script: string, args: readonly string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, [script, ...args], { cwd: REPO_ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  if (child.pid === undefined) throw new Error(`could not start ${script}`);
  installReaper();
  running.add(child);
  child.on('exit', () => running.delete(child));
  let output = '';
  let partial = '';
  const lines: string[] = [];
  const keep = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-20_000);
  };
  child.stdout.on('data', (chunk: Buffer) => {
    keep(chunk);
    partial += chunk.toString();
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  child.stderr.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { process: child, pid: child.pid, exited, output: () => output, lines };
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the child has exited. */
export async function stopChild(child: Child, graceMs = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return child.exited;
  child.process.kill('SIGTERM');
  const timer = setTimeout(() => child.process.kill('SIGKILL'), graceMs);
  const result = await child.exited;
  clearTimeout(timer);
  return result;
}

export async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs a harness's main and exits with its code; a crash prints its stack and exits 1. */
export function exitWith(name: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      console.error(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
      process.exit(1);
    },
  );
}
