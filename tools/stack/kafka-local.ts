import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mvn, resolveOnce } from './maven.ts';
import { cacheDir, stackDir } from './paths.ts';
import { run, startDaemon } from './processes.ts';

/**
 * The newest Kafka whose whole dependency tree is on Maven Central. 4.4.0's POM names
 * kafka-tools-api 4.4.0, which Central does not have, so `copy-dependencies` fails for it.
 */
export const DEFAULT_KAFKA_VERSION = '4.3.1';

export function kafkaVersion(): string {
  return process.env['SMS_WORKER_KAFKA_VERSION'] ?? DEFAULT_KAFKA_VERSION;
}

/** Resolves the broker's jars plus a log4j2 backend (the artifact ships only slf4j-api). */
export async function ensureKafkaJars(log: (line: string) => void): Promise<string> {
  const version = kafkaVersion();
  const target = join(cacheDir(), `kafka-${version}`);
  await resolveOnce(
    target,
    `Apache Kafka ${version}`,
    async (temp) => {
      await mvn(
        [
          '-f',
          join(stackDir, 'kafka-pom.xml'),
          `-Dkafka.version=${version}`,
          'dependency:copy-dependencies',
          '-DincludeScope=runtime',
          `-DoutputDirectory=${join(temp, 'lib')}`,
        ],
        `org.apache.kafka:kafka_2.13:${version}`,
        temp,
      );
    },
    log,
  );
  return join(target, 'lib');
}

/** Kafka's Uuid: 16 random bytes, base64url; ids starting with '-' are avoided as Kafka does. */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

export interface LocalKafkaOptions {
  readonly java: string;
  readonly libDir: string;
  readonly workDir: string;
  readonly brokerPort: number;
  readonly controllerPort: number;
  readonly detached: boolean;
  /**
   * A node of a cluster of several (tests of a broker restarting among others): its id, and whether
   * it is the one combined broker and controller (node 1, the default) or a broker only, which
   * finds the controller at `controllerPort`. Every node of one cluster is formatted with the same
   * `clusterId`, and `replicas` (default 1) is the internal topics' and new topics' replication;
   * `minInSync` (default 1) their `min.insync.replicas`, the transaction log's too.
   */
  readonly node?: { readonly id: number; readonly brokerOnly: boolean; readonly clusterId: string; readonly replicas: number; readonly minInSync?: number };
}

function serverProperties(options: LocalKafkaOptions, dataDir: string): string {
  const brokerOnly = options.node?.brokerOnly === true;
  const replicas = options.node?.replicas ?? 1;
  const minInSync = options.node?.minInSync ?? 1;
  const lines = [
    brokerOnly ? 'process.roles=broker' : 'process.roles=broker,controller',
    `node.id=${options.node?.id ?? 1}`,
    `controller.quorum.bootstrap.servers=127.0.0.1:${options.controllerPort}`,
    brokerOnly
      ? `listeners=PLAINTEXT://127.0.0.1:${options.brokerPort}`
      : `listeners=PLAINTEXT://127.0.0.1:${options.brokerPort},CONTROLLER://127.0.0.1:${options.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${options.brokerPort}`,
    'inter.broker.listener.name=PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    'listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT',
    `log.dirs=${dataDir}`,
    'num.partitions=1',
    // A single broker: every internal topic has one replica (a cluster's tests: one per node).
    `default.replication.factor=${replicas}`,
    `offsets.topic.replication.factor=${replicas}`,
    'offsets.topic.num.partitions=4',
    `transaction.state.log.replication.factor=${replicas}`,
    `transaction.state.log.min.isr=${minInSync}`,
    `min.insync.replicas=${minInSync}`,
    'transaction.state.log.num.partitions=4',
    `share.coordinator.state.topic.replication.factor=${replicas}`,
    'share.coordinator.state.topic.min.isr=1',
    // Tests and the demo join groups constantly; the default 3 s delay would dominate them.
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=true',
    'delete.topic.enable=true',
  ];
  return lines.join('\n') + '\n';
}

/**
 * SMS_WORKER_STACK_REQUEST_LOG=1: the broker also logs every request it completes, with its API,
 * client id and times, to kafka.log.requests beside kafka.log (Kafka's `kafka.request.logger` at
 * DEBUG). A diagnostic of how many round trips the worker makes per command (bench/README.md,
 * "Round trips per transaction"); it costs the broker noticeably, so never for timing runs.
 */
const requestLog = (logFile: string): string[] =>
  process.env['SMS_WORKER_STACK_REQUEST_LOG'] === '1'
    ? [
        'appender.requests.type=File',
        'appender.requests.name=REQUESTS',
        `appender.requests.fileName=${logFile}.requests`,
        'appender.requests.layout.type=PatternLayout',
        'appender.requests.layout.pattern=%d{HH:mm:ss.SSS} %m%n',
        'logger.requests.name=kafka.request.logger',
        'logger.requests.level=DEBUG',
        'logger.requests.additivity=false',
        'logger.requests.appenderRef.file.ref=REQUESTS',
      ]
    : [];

const log4j2 = (logFile: string): string =>
  [
    'rootLogger.level=INFO',
    'rootLogger.appenderRef.file.ref=FILE',
    'appender.file.type=File',
    'appender.file.name=FILE',
    `appender.file.fileName=${logFile}`,
    'appender.file.layout.type=PatternLayout',
    'appender.file.layout.pattern=[%d] %p %m (%c)%n',
    'logger.kafka.name=kafka',
    'logger.kafka.level=INFO',
    'logger.state.name=state.change.logger',
    'logger.state.level=WARN',
    ...requestLog(logFile),
  ].join('\n') + '\n';

/** Formats fresh KRaft storage and starts a single combined broker+controller (or one node of a cluster: `node`). */
export async function startLocalKafka(options: LocalKafkaOptions): Promise<{ pid: number; logFile: string }> {
  const dataDir = join(options.workDir, 'kafka-data');
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const propsFile = join(options.workDir, 'server.properties');
  const logConfig = join(options.workDir, 'kafka-log4j2.properties');
  const logFile = join(options.workDir, 'kafka.log');
  writeFileSync(propsFile, serverProperties(options, dataDir));
  writeFileSync(logConfig, log4j2(logFile));
  const classpath = `${options.libDir}/*`;
  const jvmLogging = `-Dlog4j2.configurationFile=${logConfig}`;

  const format = await run(options.java, [
    '-cp',
    classpath,
    jvmLogging,
    'kafka.tools.StorageTool',
    'format',
    // The controller of a one-controller quorum; a broker-only node joins it.
    ...(options.node?.brokerOnly === true ? [] : ['--standalone']),
    '-t',
    options.node?.clusterId ?? newClusterId(),
    '-c',
    propsFile,
  ]);
  if (format.code !== 0) throw new Error(`formatting Kafka storage failed (exit ${format.code}): ${format.stderr || format.stdout}`);
  return launchLocalKafka(options);
}

/**
 * Starts the broker on storage that startLocalKafka already formatted, with the same
 * configuration, ports and data: the second half of a broker restart (chaos runs).
 */
export function launchLocalKafka(options: LocalKafkaOptions): { pid: number; logFile: string } {
  const propsFile = join(options.workDir, 'server.properties');
  const logFile = join(options.workDir, 'kafka.log');
  const jvmLogging = `-Dlog4j2.configurationFile=${join(options.workDir, 'kafka-log4j2.properties')}`;
  const child = startDaemon(
    options.java,
    [
      '-Xms256m',
      '-Xmx1g',
      '-XX:+UseG1GC',
      '-XX:MaxGCPauseMillis=20',
      '-Djava.awt.headless=true',
      jvmLogging,
      '-cp',
      `${options.libDir}/*`,
      'kafka.Kafka',
      propsFile,
    ],
    { logFile: join(options.workDir, 'kafka.stdout.log'), detached: options.detached },
  );
  if (child.pid === undefined) throw new Error('could not start the Kafka broker process');
  return { pid: child.pid, logFile };
}
