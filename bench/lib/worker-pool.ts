/**
 * Several worker processes (the shipped CLI) in one consumer group, for the chaos run: each has
 * its own number, Kafka client id (`<prefix>-w<n>`, so the group's assignment can be attributed)
 * and log file. Kills, freezes and graceful stops are the run's faults; an exit the run did not
 * cause is recorded and answered with a replacement.
 */
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import kafkajs from '../../src/kafka/kafkajs.ts';
import { withAdmin } from '../../src/kafka/admin.ts';
import { startWorker } from '../pipelines/worker.ts';
import { sleep, stopChild, type Child } from './proc.ts';

export type WorkerState = 'running' | 'frozen' | 'stopping' | 'gone';

export interface PoolWorker {
  readonly n: number;
  readonly clientId: string;
  readonly child: Child;
  readonly logFile: string;
  state: WorkerState;
}

export class WorkerPool {
  readonly workers: PoolWorker[] = [];
  readonly unplannedExits: string[] = [];
  readonly #env: Record<string, string>;
  readonly #logDir: string;
  readonly #clientPrefix: string;
  readonly #say: (line: string) => void;
  #closing = false;

  constructor(options: { env: Record<string, string>; logDir: string; clientPrefix: string; say: (line: string) => void }) {
    this.#env = options.env;
    this.#logDir = options.logDir;
    this.#clientPrefix = options.clientPrefix;
    this.#say = options.say;
  }

  /** Workers not stopped, killed or exited (frozen ones included). */
  live(): PoolWorker[] {
    return this.workers.filter((w) => w.state === 'running' || w.state === 'frozen');
  }

  running(): PoolWorker[] {
    return this.workers.filter((w) => w.state === 'running');
  }

  /** `env` on top of the pool's (e.g. the worker's own HTTP_PORT, to read its /readyz). */
  start(why: string, env: Record<string, string> = {}): PoolWorker {
    const n = this.workers.length + 1;
    const clientId = `${this.#clientPrefix}-w${n}`;
    const child = startWorker({ ...this.#env, ...env, KAFKA_CLIENT_ID: clientId });
    const logFile = join(this.#logDir, `worker-${n}.log`);
    const log = createWriteStream(logFile);
    child.process.stdout?.pipe(log);
    child.process.stderr?.pipe(log);
    const worker: PoolWorker = { n, clientId, child, logFile, state: 'running' };
    this.workers.push(worker);
    void child.exited.then(({ code, signal }) => {
      const planned = worker.state === 'stopping' || worker.state === 'gone';
      worker.state = 'gone';
      if (planned || this.#closing) return;
      const line = `worker #${n} exited on its own (code ${code}, signal ${signal}); see ${logFile}`;
      this.unplannedExits.push(line);
      this.#say(`${line}; starting a replacement`);
      setTimeout(() => {
        if (!this.#closing) this.start(`replacement for #${n} (unplanned exit)`);
      }, 1_000);
    });
    this.#say(`worker #${n} started (pid ${child.pid}, ${why})`);
    return worker;
  }

  async kill(worker: PoolWorker): Promise<void> {
    worker.state = 'gone';
    worker.child.process.kill('SIGKILL');
    await worker.child.exited;
  }

  /** SIGSTOP for `ms`, then SIGCONT. */
  async freeze(worker: PoolWorker, ms: number): Promise<void> {
    worker.state = 'frozen';
    worker.child.process.kill('SIGSTOP');
    await sleep(ms);
    if (worker.state !== 'frozen') return;
    worker.child.process.kill('SIGCONT');
    worker.state = 'running';
  }

  /** Graceful stop: SIGTERM, SIGKILL only after `graceMs`. */
  async terminate(worker: PoolWorker, graceMs = 60_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    worker.state = 'stopping';
    const exit = await stopChild(worker.child, graceMs);
    worker.state = 'gone';
    return exit;
  }

  async stopAll(graceMs = 60_000): Promise<{ n: number; code: number | null; signal: NodeJS.Signals | null }[]> {
    this.#closing = true;
    const live = this.workers.filter((w) => w.state !== 'gone');
    for (const w of live) if (w.state === 'frozen') w.child.process.kill('SIGCONT');
    return Promise.all(live.map(async (w) => ({ n: w.n, ...(await this.terminate(w, graceMs)) })));
  }
}

/**
 * The group's current assignment of `topic`, by member client id (a snapshot from the group
 * coordinator; it can lag a rebalance in progress).
 */
export async function groupAssignment(kafka: Kafka, group: string, topic: string): Promise<Map<string, number[]>> {
  return withAdmin(kafka, async (admin) => {
    const { groups } = await admin.describeGroups([group]);
    const out = new Map<string, number[]>();
    for (const member of groups[0]?.members ?? []) {
      const decoded = member.memberAssignment.length === 0 ? null : kafkajs.AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
      const partitions = decoded?.assignment[topic] ?? [];
      out.set(
        member.clientId,
        [...(out.get(member.clientId) ?? []), ...partitions].sort((a, b) => a - b),
      );
    }
    return out;
  });
}
