/**
 * A secured single-node Kafka (KRaft) of its own for one test file, as a production cluster is
 * secured: clients reach it only over SASL_SSL with SCRAM-SHA-512, certificates are issued at test
 * time by a throwaway CA (openssl), and the StandardAuthorizer denies whatever no ACL allows.
 *
 * It never touches the shared stack's broker: it runs from the same cached Kafka jars
 * (tools/stack/kafka-local.ts) on free ports in a temporary directory, and is stopped by the file
 * that started it. The controller listener is PLAINTEXT on loopback; the broker reaches its own
 * controller as ANONYMOUS there, which is why ANONYMOUS is a super user: no client listener
 * accepts an unauthenticated connection, so no client can be ANONYMOUS.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Kafka } from 'kafkajs';
import type { KafkaSettings } from '../../src/config/index.ts';
import { createKafka } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { findJavaRuntimes, pickJava } from '../../tools/stack/java.ts';
import { ensureKafkaJars } from '../../tools/stack/kafka-local.ts';
import { freePort, run, startDaemon, stopPid } from '../../tools/stack/processes.ts';
import { eventually, PollAbort } from '../../tools/poll.ts';

export interface SaslUser {
  readonly username: string;
  readonly password: string;
}

export interface SecuredKafka {
  /** host:port of the SASL_SSL listener. */
  readonly bootstrap: string;
  /** PEM file of the CA that issued the broker's certificate (what clients must trust). */
  readonly caFile: string;
  /** PEM file of a CA that did not: a client trusting only it must refuse the broker. */
  readonly untrustedCaFile: string;
  /** The super user (creates topics and ACLs), and users with no ACLs beyond what a test grants. */
  readonly admin: SaslUser;
  readonly users: Readonly<Record<string, SaslUser>>;
  /** Client settings for a user, as the worker's configuration builds them. */
  settings(user: SaslUser, clientId: string): KafkaSettings;
  /** A kafkajs client for a user, made by the worker's own factory (its log silenced). */
  client(user: SaslUser, clientId: string): Kafka;
  /** The broker's log, to explain a failure. */
  logTail(): string;
  stop(): Promise<void>;
}

function secret(): string {
  return randomBytes(18).toString('base64url');
}

async function openssl(dir: string, args: readonly string[]): Promise<void> {
  const result = await run('openssl', args, { cwd: dir });
  if (result.code !== 0) throw new Error(`openssl ${args[0] ?? ''} failed (exit ${result.code}): ${result.stderr}`);
}

/** A CA, and a broker certificate for 127.0.0.1 signed by it, in a PKCS#12 keystore for Kafka. */
async function issueCertificates(dir: string, keystorePassword: string): Promise<{ caFile: string; untrustedCaFile: string; keystore: string }> {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  await openssl(dir, ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sms-worker test CA']);
  await openssl(dir, ['req', '-x509', ...ec, '-keyout', 'other-ca.key', '-out', 'other-ca.pem', '-days', '2', '-subj', '/CN=an unrelated CA']);
  await openssl(dir, ['req', ...ec, '-keyout', 'broker.key', '-out', 'broker.csr', '-subj', '/CN=127.0.0.1']);
  writeFileSync(join(dir, 'broker.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  await openssl(dir, [
    'x509',
    '-req',
    '-in',
    'broker.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'broker.pem',
    '-days',
    '2',
    '-extfile',
    'broker.ext',
  ]);
  await openssl(dir, [
    'pkcs12',
    '-export',
    '-in',
    'broker.pem',
    '-inkey',
    'broker.key',
    '-certfile',
    'ca.pem',
    '-name',
    'broker',
    '-out',
    'broker.p12',
    '-passout',
    `pass:${keystorePassword}`,
  ]);
  return { caFile: join(dir, 'ca.pem'), untrustedCaFile: join(dir, 'other-ca.pem'), keystore: join(dir, 'broker.p12') };
}

function serverProperties(o: {
  port: number;
  controllerPort: number;
  dataDir: string;
  keystore: string;
  keystorePassword: string;
  caFile: string;
  admin: SaslUser;
}): string {
  const jaas = `org.apache.kafka.common.security.scram.ScramLoginModule required username="${o.admin.username}" password="${o.admin.password}";`;
  return [
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.bootstrap.servers=127.0.0.1:${o.controllerPort}`,
    `listeners=SASL_SSL://127.0.0.1:${o.port},CONTROLLER://127.0.0.1:${o.controllerPort}`,
    `advertised.listeners=SASL_SSL://127.0.0.1:${o.port}`,
    'listener.security.protocol.map=SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    // The broker talks to itself (transaction markers) over the secured listener, as the super user.
    'inter.broker.listener.name=SASL_SSL',
    'sasl.enabled.mechanisms=SCRAM-SHA-512',
    'sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512',
    `listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=${jaas}`,
    'ssl.keystore.type=PKCS12',
    `ssl.keystore.location=${o.keystore}`,
    `ssl.keystore.password=${o.keystorePassword}`,
    `ssl.key.password=${o.keystorePassword}`,
    'ssl.truststore.type=PEM',
    `ssl.truststore.location=${o.caFile}`,
    'ssl.client.auth=none',
    'authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer',
    `super.users=User:${o.admin.username};User:ANONYMOUS`,
    'allow.everyone.if.no.acl.found=false',
    `log.dirs=${o.dataDir}`,
    'num.partitions=1',
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=2',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=2',
    'share.coordinator.state.topic.replication.factor=1',
    'share.coordinator.state.topic.min.isr=1',
    'group.initial.rebalance.delay.ms=0',
    'auto.create.topics.enable=false',
  ].join('\n');
}

const log4j2 = (logFile: string): string =>
  [
    'rootLogger.level=INFO',
    'rootLogger.appenderRef.file.ref=FILE',
    'appender.file.type=File',
    'appender.file.name=FILE',
    `appender.file.fileName=${logFile}`,
    'appender.file.layout.type=PatternLayout',
    'appender.file.layout.pattern=[%d] %p %m (%c)%n',
    'logger.state.name=state.change.logger',
    'logger.state.level=WARN',
  ].join('\n');

/**
 * Starts the secured broker with SCRAM credentials for the admin and for each named user
 * (created at format time, as `kafka-storage format --add-scram` does), and waits until the admin
 * can list topics over SASL_SSL.
 */
export async function startSecuredKafka(userNames: readonly string[], log: (line: string) => void = () => undefined): Promise<SecuredKafka> {
  const java = pickJava(await findJavaRuntimes(), 17);
  if (java === undefined) throw new Error('the secured-Kafka test needs Java 17 or newer (none found on PATH, JAVA_HOME or /usr/lib/jvm)');
  const libDir = await ensureKafkaJars(log);
  const dir = mkdtempSync(join(tmpdir(), 'sms-worker-secured-kafka-'));
  const dataDir = join(dir, 'data');
  mkdirSync(dataDir);
  const keystorePassword = secret();
  const { caFile, untrustedCaFile, keystore } = await issueCertificates(dir, keystorePassword);
  const admin = { username: 'admin', password: secret() };
  const users = Object.fromEntries(userNames.map((name) => [name, { username: name, password: secret() }]));
  const [port, controllerPort] = [await freePort(), await freePort()];
  const props = join(dir, 'server.properties');
  writeFileSync(props, serverProperties({ port, controllerPort, dataDir, keystore, keystorePassword, caFile, admin }));
  const logFile = join(dir, 'kafka.log');
  writeFileSync(join(dir, 'log4j2.properties'), log4j2(logFile));
  const jvmLogging = `-Dlog4j2.configurationFile=${join(dir, 'log4j2.properties')}`;

  const scram = [admin, ...Object.values(users)].flatMap((u) => ['--add-scram', `SCRAM-SHA-512=[name=${u.username},password=${u.password}]`]);
  const clusterId = randomBytes(16).toString('base64url').replace(/^-/, 'A');
  const format = await run(java.path, [
    '-cp',
    `${libDir}/*`,
    jvmLogging,
    'kafka.tools.StorageTool',
    'format',
    '--standalone',
    '-t',
    clusterId,
    '-c',
    props,
    ...scram,
  ]);
  if (format.code !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`formatting the secured broker's storage failed (exit ${format.code}): ${format.stderr || format.stdout}`);
  }
  const child = startDaemon(
    java.path,
    ['-Xms128m', '-Xmx512m', '-XX:+UseG1GC', '-Djava.awt.headless=true', jvmLogging, '-cp', `${libDir}/*`, 'kafka.Kafka', props],
    {
      logFile: join(dir, 'kafka.stdout.log'),
      detached: false,
    },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not start the secured Kafka broker');

  const bootstrap = `127.0.0.1:${port}`;
  const settings = (user: SaslUser, clientId: string): KafkaSettings => ({
    brokers: [bootstrap],
    clientId,
    ssl: { ca: readFileSync(caFile, 'utf8'), rejectUnauthorized: true },
    sasl: { mechanism: 'scram-sha-512', username: user.username, password: user.password },
  });
  const client = (user: SaslUser, clientId: string): Kafka =>
    createKafka(settings(user, clientId), createLogger('silent'), clientId, { retry: { retries: 2 } });
  const logTail = (): string => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-60).join('\n');
    } catch {
      return '(no broker log)';
    }
  };
  const stop = async (): Promise<void> => {
    await stopPid(pid, 10_000);
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new PollAbort(`the secured broker exited (${child.exitCode}):\n${logTail()}`);
        const probe = client(admin, 'secured-kafka-probe').admin();
        try {
          await probe.connect();
          await probe.listTopics();
          return true;
        } finally {
          await probe.disconnect().catch(() => undefined);
        }
      },
      120_000,
      'the secured broker to accept the admin over SASL_SSL',
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { bootstrap, caFile, untrustedCaFile, admin, users, settings, client, logTail, stop };
}
