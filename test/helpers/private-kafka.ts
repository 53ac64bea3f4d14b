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
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { findJavaRuntimes, pickJava } from '../../tools/stack/java.ts';
import { ensureKafkaJars, launchLocalKafka, startLocalKafka, type LocalKafkaOptions } from '../../tools/stack/kafka-local.ts';
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
  /** Start it again on the same port and data, and wait until it answers. */
  start(): Promise<void>;
  logTail(): string;
  /** Stop it for good and delete its data. */
  dispose(): Promise<void>;
}

export async function startPrivateKafka(log: (line: string) => void = () => undefined): Promise<PrivateKafka> {
  const java = pickJava(await findJavaRuntimes(), 17);
  if (java === undefined) throw new Error('the private-Kafka test needs Java 17 or newer (none found on PATH, JAVA_HOME or /usr/lib/jvm)');
  const libDir = await ensureKafkaJars(log);
  const workDir = mkdtempSync(join(tmpdir(), 'sms-worker-private-kafka-'));
  const options: LocalKafkaOptions = { java: java.path, libDir, workDir, brokerPort: await freePort(), controllerPort: await freePort(), detached: false };
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
  return {
    bootstrap,
    client,
    stop,
    kill,
    start: async () => {
      if (pid === undefined) pid = launchLocalKafka(options).pid;
      await answering();
    },
    logTail,
    dispose,
  };
}
