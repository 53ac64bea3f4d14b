import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { eventually, PollTimeout } from '../poll.ts';

/** Asks the kernel for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolvePort(address.port);
        else reject(new Error('could not obtain a free port'));
      });
    });
  });
}

export interface RunResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to completion, capturing its output (used for mvn and java -version). */
export async function run(command: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code: code ?? -1, stdout, stderr }));
  });
}

export interface DaemonOptions {
  readonly cwd?: string;
  readonly env?: NodeJS.ProcessEnv;
  /** stdout and stderr are appended here, so an operator always knows where to look. */
  readonly logFile: string;
  /**
   * Detached daemons get their own process group and outlive the parent (`stack:up`); attached
   * ones die with the test run's teardown.
   */
  readonly detached: boolean;
}

/** Starts a long-running process with its output in a known log file. */
export function startDaemon(command: string, args: readonly string[], options: DaemonOptions): ChildProcess {
  const fd = openSync(options.logFile, 'a');
  try {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', fd, fd],
      detached: options.detached,
    });
    if (options.detached) child.unref();
    return child;
  } finally {
    closeSync(fd);
  }
}

/** Exits are noticed within about 100 ms. */
const EXIT_POLL = { initialMs: 100, maxMs: 100, jitter: 0.5 } as const;

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SIGTERM, wait up to `graceMs`, then SIGKILL. Resolves when the process is gone. */
export async function stopPid(pid: number, graceMs = 15_000): Promise<void> {
  if (!isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const gone = (): boolean => !isAlive(pid);
  try {
    await eventually(gone, graceMs, `process ${pid} to exit`, { interval: EXIT_POLL });
    return;
  } catch (error) {
    if (!(error instanceof PollTimeout)) throw error;
  }
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    return;
  }
  // SIGKILL cannot be ignored: the wait ends; the bound only guards against a process stuck in the kernel.
  await eventually(gone, 60_000, `process ${pid} to exit after SIGKILL`, { interval: EXIT_POLL });
}
