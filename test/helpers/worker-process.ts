import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const MAIN = join(import.meta.dirname, '..', '..', 'src', 'cli', 'main.ts');

/** The worker as operators run it: its own process, configured by environment, stopped by signals. */
export class WorkerProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output = '';
  /** What the process wrote to stderr alone (its logs go to stdout): runtime warnings, crashes. */
  stderr = '';

  constructor(env: Record<string, string>) {
    this.child = spawn(process.execPath, [MAIN, 'run'], { env: { ...process.env, ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.child.stderr?.on('data', (chunk: Buffer) => {
      this.output += chunk.toString();
      this.stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  async stopped(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    const timeout = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`worker did not exit within ${timeoutMs} ms; output:\n${this.output.slice(-3000)}`)), timeoutMs).unref(),
    );
    return Promise.race([this.exited, timeout]);
  }
}
