/**
 * A plaintext single-node Kafka (KRaft) of its own for one test file, which the test can stop and
 * start again (same port, same data): the way to take "the broker" away from a worker without
 * stopping the shared test broker other tests use. A restart through a proxy would not do: a
 * client reaches a broker at the address it advertises, and a real restart also closes the
 * broker's side of every connection mid-request, as a Kafka upgrade or a node drain does.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { findJavaRuntimes, pickJava } from '../../tools/stack/java.ts';
import { ensureKafkaJars, launchLocalKafka, newClusterId, startLocalKafka, type LocalKafkaOptions } from '../../tools/stack/kafka-local.ts';
import { freePort, isAlive, stopPid } from '../../tools/stack/processes.ts';
import { eventually, PollAbort } from '../../tools/poll.ts';
import { uniqueName } from './kafka.ts';

export interface PrivateKafka {
  readonly bootstrap: string;
  /** A client of this broker, made by the worker's own factory (kafkajs's log silenced). */
  client(clientId?: string): Kafka;
  /** SIGTERM (a controlled shutdown, as a rolling restart does) and wait until the process is gone. */
  stop(): Promise<void>;
  /** SIGKILL (a node lost, an OOM kill): every connection drops at once, nothing is handed over. */
  kill(): Promise<void>;
  /** SIGSTOP: the process stays, its connections stay open, nothing is answered (a hung node). */
  pause(): void;
  /** SIGCONT after pause(). */
  resume(): void;
  /** Start it again on the same port and data, and wait until it answers. */
  start(): Promise<void>;
  logTail(): string;
  /** Its directory: configuration, log and data (`kafka-data`), deleted by dispose. */
  readonly workDir: string;
  /** Stop it for good and delete its data. */
  dispose(): Promise<void>;
}

export async function startPrivateKafka(log: (line: string) => void = () => undefined): Promise<PrivateKafka> {
  const { java, libDir } = await kafkaRuntime(log);
  return startNode({
    java,
    libDir,
    workDir: mkdtempSync(join(tmpdir(), 'sms-worker-private-kafka-')),
    brokerPort: await freePort(),
    controllerPort: await freePort(),
    detached: false,
  });
}

/**
 * A private broker for the tests of the calling file (or describe block): started before them,
 * disposed after them. The object stands for it inside tests and hooks.
 */
export function usePrivateKafka(): PrivateKafka {
  let running: PrivateKafka | undefined;
  const current = (): PrivateKafka => {
    if (running === undefined) throw new Error('usePrivateKafka(): the broker is only there inside tests and hooks');
    return running;
  };
  beforeAll(async () => {
    running = await startPrivateKafka();
  }, 180_000);
  afterAll(async () => {
    await running?.dispose();
    running = undefined;
  });
  return {
    get bootstrap() {
      return current().bootstrap;
    },
    get workDir() {
      return current().workDir;
    },
    client: (clientId) => current().client(clientId),
    stop: () => current().stop(),
    kill: () => current().kill(),
    pause: () => current().pause(),
    resume: () => current().resume(),
    start: () => current().start(),
    logTail: () => current().logTail(),
    dispose: () => current().dispose(),
  };
}

/**
 * A plaintext cluster of its own: node 1 the broker and the one controller, the others brokers
 * only, every topic (the internal ones too) with a replica on each node, so a broker other than
 * node 1 can restart while the cluster serves on (a rolling restart of the brokers, as a Kafka
 * upgrade does one node at a time). `nodes[i].bootstrap` is node i + 1's address; `bootstrap`
 * lists them all, as a client is configured.
 */
export async function startPrivateCluster(
  count = 2,
  log: (line: string) => void = () => undefined,
  /** Every topic's and the transaction log's `min.insync.replicas`. */
  minInSync = 1,
): Promise<{ readonly bootstrap: string; readonly nodes: readonly PrivateKafka[]; dispose(): Promise<void> }> {
  const { java, libDir } = await kafkaRuntime(log);
  const clusterId = newClusterId();
  const controllerPort = await freePort();
  const nodes: PrivateKafka[] = [];
  const dispose = async (): Promise<void> => {
    for (const node of [...nodes].reverse()) await node.dispose();
  };
  try {
    for (let id = 1; id <= count; id += 1) {
      const workDir = mkdtempSync(join(tmpdir(), `sms-worker-private-kafka-${id}-`));
      const node = { id, brokerOnly: id > 1, clusterId, replicas: count, minInSync };
      nodes.push(await startNode({ java, libDir, workDir, brokerPort: await freePort(), controllerPort, detached: false, node }));
    }
  } catch (error) {
    await dispose();
    throw error;
  }
  const bootstrap = nodes.map((node) => node.bootstrap).join(',');
  return { bootstrap, nodes, dispose };
}

async function kafkaRuntime(log: (line: string) => void): Promise<{ java: string; libDir: string }> {
  const java = pickJava(await findJavaRuntimes(), 17);
  if (java === undefined) throw new Error('the private-Kafka test needs Java 17 or newer (none found on PATH, JAVA_HOME or /usr/lib/jvm)');
  return { java: java.path, libDir: await ensureKafkaJars(log) };
}

async function startNode(options: LocalKafkaOptions): Promise<PrivateKafka> {
  const { workDir } = options;
  const bootstrap = `127.0.0.1:${options.brokerPort}`;
  const client = (clientId = uniqueName('private')): Kafka =>
    createKafka(plaintextKafkaSettings(bootstrap, clientId), createLogger('silent'), clientId, { retry: { retries: 2 } });
  const logTail = (): string => {
    try {
      return readFileSync(join(workDir, 'kafka.log'), 'utf8').split('\n').slice(-60).join('\n');
    } catch {
      return '(no broker log)';
    }
  };
  let pid: number | undefined;
  const answering = async (): Promise<void> => {
    await eventually(
      async () => {
        if (pid === undefined) throw new PollAbort('the private broker is not running');
        const admin = client('private-kafka-probe').admin();
        try {
          await admin.connect();
          await admin.listTopics();
          return true;
        } finally {
          await admin.disconnect().catch(() => undefined);
        }
      },
      120_000,
      `the private broker at ${bootstrap} to answer:\n${logTail()}`,
    );
  };
  const stop = async (): Promise<void> => {
    if (pid === undefined) return;
    // A paused broker would not act on SIGTERM.
    if (isAlive(pid)) process.kill(pid, 'SIGCONT');
    await stopPid(pid, 60_000);
    pid = undefined;
  };
  const kill = async (): Promise<void> => {
    if (pid === undefined) return;
    const killed = pid;
    process.kill(killed, 'SIGKILL');
    await eventually(() => !isAlive(killed), 60_000, `the private broker (${killed}) to exit after SIGKILL`);
    pid = undefined;
  };
  const dispose = async (): Promise<void> => {
    await stop();
    rmSync(workDir, { recursive: true, force: true });
  };
  try {
    pid = (await startLocalKafka(options)).pid;
    await answering();
  } catch (error) {
    await dispose();
    throw error;
  }
  const signal = (name: 'SIGSTOP' | 'SIGCONT'): void => {
    if (pid === undefined) throw new Error(`the private broker is not running (${name})`);
    process.kill(pid, name);
  };
  return {
    bootstrap,
    client,
    stop,
    kill,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    start: async () => {
      if (pid === undefined) pid = launchLocalKafka(options).pid;
      await answering();
    },
    logTail,
    workDir,
    dispose,
  };
}
