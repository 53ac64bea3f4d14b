/**
 * A CPU limit for the processes the bench starts, as a pod's `resources.limits.cpu` sets one: a
 * cgroup (v1 `cpu` controller, which these machines mount writable at /sys/fs/cgroup/cpu) whose
 * CFS quota is `cores` × the 100 ms period. A process added takes its children with it. Needs root
 * (the bench machines run as root); `close` removes the group once its processes have exited.
 */
import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const CPU_CONTROLLER = '/sys/fs/cgroup/cpu';
const PERIOD_US = 100_000;

export class CpuQuota {
  readonly #dir: string;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** A new group limited to `cores` (e.g. 1, 0.5), named after this process. */
  static create(cores: number): CpuQuota {
    if (!(cores > 0)) throw new Error(`a CPU limit must be above 0 cores, not ${cores}`);
    const dir = join(CPU_CONTROLLER, `sms-worker-bench-${process.pid}-${Date.now()}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
    writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(Math.round(cores * PERIOD_US)));
    return new CpuQuota(dir);
  }

  /** Moves `pid` (and the children it starts from now on) into the group. */
  add(pid: number | undefined): void {
    if (pid !== undefined) writeFileSync(join(this.#dir, 'cgroup.procs'), String(pid));
  }

  /** Periods in which the group was throttled, of those it ran in (cpu.stat). */
  throttling(): { readonly periods: number; readonly throttled: number } {
    const stat = Object.fromEntries(
      readFileSync(join(this.#dir, 'cpu.stat'), 'utf8')
        .trim()
        .split('\n')
        .map((line) => line.split(' ') as [string, string]),
    );
    return { periods: Number(stat['nr_periods'] ?? 0), throttled: Number(stat['nr_throttled'] ?? 0) };
  }

  close(): void {
    try {
      rmdirSync(this.#dir);
    } catch {
      // Still has a process (one that outlived its stop): the kernel keeps it; nothing else to do.
    }
  }
}
