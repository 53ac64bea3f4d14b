import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chooseStack, parseForcedMode } from './choose.ts';
import { KAFKA_IMAGE, probeDocker, REGISTRY_IMAGE, startContainers } from './containers.ts';
import { findJavaRuntimes, pickJava } from './java.ts';
import { ensureKafkaJars, kafkaVersion, launchLocalKafka, startLocalKafka, type LocalKafkaOptions } from './kafka-local.ts';
import { mavenAvailable } from './maven.ts';
import { cacheDir, stackStateFile } from './paths.ts';
import { kafkaRoundTrip, registryAnswers } from './probe.ts';
import { eventually, PollAbort } from '../poll.ts';
import { freePort, isAlive, stopPid } from './processes.ts';
import { ensureApicurio, pickApicurio, startLocalApicurio } from './registry-local.ts';

/**
 * How the stack was obtained, in the order they are tried:
 * - `external`: KAFKA_BROKERS and SCHEMA_REGISTRY_URL are set; nothing is started.
 * - `reused`: a stack started by `npm run stack:up` is running and healthy.
 * - `docker`: a Docker engine is reachable; testcontainers runs Kafka and Confluent's registry.
 * - `local`: Java and Maven are here; Kafka and Apicurio Registry run as local processes.
 * - `local` also when the engine is reachable but cannot pull the images (air-gapped machine).
 * SMS_WORKER_STACK=docker|local forces one of the last two (see choose.ts).
 */
export type StackMode = 'external' | 'reused' | 'docker' | 'local';

export interface RunningStack {
  readonly mode: StackMode;
  readonly kafkaBrokers: string;
  readonly schemaRegistryUrl: string;
  /** Versions and where the logs are, for the operator. */
  readonly description: string;
  stop(): Promise<void>;
  /**
   * Only for mode `local`: stops the broker (SIGTERM, waits for its exit; or SIGKILL with `kill`, a
   * node lost) and starts it again on the same ports, configuration and data after `downMs` (0),
   * resolving once a transactional round trip works.
   */
  restartKafka?: (options?: { readonly kill?: boolean; readonly downMs?: number }) => Promise<void>;
}

interface CliStackState {
  readonly kafkaBrokers: string;
  readonly schemaRegistryUrl: string;
  readonly pids: readonly number[];
  readonly workDir: string;
  readonly description: string;
}

export class NoStackError extends Error {
  constructor(detail: string) {
    super(
      `cannot provide Kafka and a schema registry: needs Docker, or Java 17+ and Maven ` +
        `(or set KAFKA_BROKERS and SCHEMA_REGISTRY_URL to use running ones). ${detail}`,
    );
    this.name = 'NoStackError';
  }
}

export interface StartStackOptions {
  /** Detached processes outlive this process (stack:up); attached ones are owned by it (tests). */
  readonly detached?: boolean;
  readonly log?: (line: string) => void;
  /** Reuse a healthy stack from `stack:up` (default true). */
  readonly reuse?: boolean;
}

/** Between readiness checks while the JVMs start: a few per second, not in step with each other. */
const STARTUP_POLL = { initialMs: 300, maxMs: 1_000, jitter: 0.5 } as const;

/** The registry's Confluent-compatible base URL on an Apicurio server. */
const ccompat = (port: number): string => `http://127.0.0.1:${port}/apis/ccompat/v7`;

export async function startStack(options: StartStackOptions = {}): Promise<RunningStack> {
  const log = options.log ?? ((line: string) => console.log(line));
  const brokers = process.env['KAFKA_BROKERS'];
  const registryUrl = process.env['SCHEMA_REGISTRY_URL'];
  if (brokers !== undefined && brokers !== '' && registryUrl !== undefined && registryUrl !== '') {
    return {
      mode: 'external',
      kafkaBrokers: brokers,
      schemaRegistryUrl: registryUrl,
      description: `given addresses (KAFKA_BROKERS, SCHEMA_REGISTRY_URL)`,
      stop: async () => undefined,
    };
  }
  // SMS_WORKER_REUSE_STACK=false makes a run behave as on a clean machine (CI).
  if (options.reuse !== false && process.env['SMS_WORKER_REUSE_STACK'] !== 'false') {
    const existing = await runningCliStack();
    if (existing !== undefined) {
      return {
        mode: 'reused',
        kafkaBrokers: existing.kafkaBrokers,
        schemaRegistryUrl: existing.schemaRegistryUrl,
        description: `${existing.description} (started by stack:up)`,
        stop: async () => undefined,
      };
    }
  }
  const forced = parseForcedMode(process.env['SMS_WORKER_STACK']);
  const choice = chooseStack(forced, forced === undefined ? await probeDocker(log) : undefined);
  if (choice.mode === 'docker') {
    log(`stack: ${choice.reason}; starting ${KAFKA_IMAGE} and ${REGISTRY_IMAGE} with testcontainers…`);
    const containers = await startContainers();
    return {
      mode: 'docker',
      kafkaBrokers: containers.kafkaBrokers,
      schemaRegistryUrl: containers.schemaRegistryUrl,
      description: `${KAFKA_IMAGE} + ${REGISTRY_IMAGE} (testcontainers)`,
      stop: () => containers.stop(),
    };
  }
  log(`stack: ${choice.reason}; using local processes (Java + Maven)`);
  return startLocalStack(options.detached ?? false, log, choice.reason);
}

async function startLocalStack(detached: boolean, log: (line: string) => void, why: string): Promise<RunningStack> {
  const runtimes = await findJavaRuntimes();
  const kafkaJava = pickJava(runtimes, 17);
  const registry = pickApicurio(runtimes);
  if (kafkaJava === undefined || registry === undefined) {
    throw new NoStackError(`Not Docker: ${why}; and no Java 17+ runtime was found (looked at $JAVA_HOME, PATH, /usr/lib/jvm).`);
  }
  if (!(await mavenAvailable())) throw new NoStackError(`Not Docker: ${why}; and \`mvn\` is not on PATH.`);

  cleanStaleRuns();
  const [libDir, registryHome] = await Promise.all([ensureKafkaJars(log), ensureApicurio(registry.release, log)]);
  const workDir = join(cacheDir(), 'stack', detached ? 'cli' : `run-${process.pid}`);
  rmSync(workDir, { recursive: true, force: true });
  mkdirSync(workDir, { recursive: true });

  const [brokerPort, controllerPort, registryPort, managementPort] = await distinctFreePorts(4);
  const started = Date.now();
  const pids: number[] = [];
  const stopAll = async (): Promise<void> => {
    await Promise.all(pids.map((pid) => stopPid(pid)));
    rmSync(join(workDir, 'kafka-data'), { recursive: true, force: true });
  };
  // If the owner dies without teardown, do not leave the JVMs behind.
  const killOnExit = (): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  if (!detached) process.once('exit', killOnExit);

  try {
    const kafkaOptions: LocalKafkaOptions = { java: kafkaJava.path, libDir, workDir, brokerPort, controllerPort, detached };
    const kafka = await startLocalKafka(kafkaOptions);
    pids.push(kafka.pid);
    const apicurio = startLocalApicurio({
      java: registry.java.path,
      home: registryHome,
      jar: registry.release.jar,
      port: registryPort,
      managementPort,
      workDir,
      detached,
    });
    pids.push(apicurio.pid);
    writeFileSync(join(workDir, 'owner.json'), JSON.stringify({ owner: process.pid, pids, detached }));

    const kafkaBrokers = `127.0.0.1:${brokerPort}`;
    const schemaRegistryUrl = ccompat(registryPort);
    const alive = (pid: number, name: string, file: string): void => {
      if (!isAlive(pid)) throw new PollAbort(`${name} exited during start-up; see ${file}:\n${tail(file)}`);
    };
    await Promise.all([
      eventually(
        async () => {
          alive(apicurio.pid, 'Apicurio Registry', apicurio.logFile);
          return registryAnswers(schemaRegistryUrl);
        },
        120_000,
        `Apicurio Registry to answer (see ${apicurio.logFile})`,
        { interval: STARTUP_POLL },
      ),
      eventually(
        async () => {
          alive(kafka.pid, 'Kafka', kafka.logFile);
          await kafkaRoundTrip([kafkaBrokers], 30_000);
          return true;
        },
        120_000,
        `a Kafka produce/consume round trip (see ${kafka.logFile})`,
        { interval: STARTUP_POLL },
      ),
    ]);
    const description =
      `Apache Kafka ${kafkaVersion()} (KRaft, Java ${kafkaJava.major}) at ${kafkaBrokers}, ` +
      `Apicurio Registry ${registry.release.version} (Java ${registry.java.major}) at ${schemaRegistryUrl}; ` +
      `logs: ${kafka.logFile}, ${apicurio.logFile}`;
    log(`stack: local processes ready in ${((Date.now() - started) / 1000).toFixed(1)} s: ${description}`);
    if (detached) {
      const state: CliStackState = { kafkaBrokers, schemaRegistryUrl, pids, workDir, description };
      mkdirSync(dirname(stackStateFile()), { recursive: true });
      writeFileSync(stackStateFile(), JSON.stringify(state, null, 2));
    }
    return {
      mode: 'local',
      kafkaBrokers,
      schemaRegistryUrl,
      description,
      stop: async () => {
        process.removeListener('exit', killOnExit);
        await stopAll();
      },
      restartKafka: async ({ kill = false, downMs = 0 } = {}) => {
        const index = pids.indexOf(kafka.pid);
        if (kill) {
          const killed = kafka.pid;
          process.kill(killed, 'SIGKILL');
          await eventually(() => !isAlive(killed), 60_000, `Kafka (${killed}) to exit after SIGKILL`);
        } else await stopPid(kafka.pid, 60_000);
        if (downMs > 0) await new Promise((resolve) => setTimeout(resolve, downMs));
        const restarted = launchLocalKafka(kafkaOptions);
        kafka.pid = restarted.pid;
        pids[index] = restarted.pid;
        writeFileSync(join(workDir, 'owner.json'), JSON.stringify({ owner: process.pid, pids, detached }));
        await eventually(
          async () => {
            alive(kafka.pid, 'Kafka', kafka.logFile);
            await kafkaRoundTrip([kafkaBrokers], 30_000);
            return true;
          },
          120_000,
          `Kafka to come back after its restart (see ${kafka.logFile})`,
          { interval: STARTUP_POLL },
        );
      },
    };
  } catch (error) {
    process.removeListener('exit', killOnExit);
    await stopAll();
    throw error;
  }
}

async function distinctFreePorts(count: 4): Promise<[number, number, number, number]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  const [a, b, c, d] = [...ports];
  if (a === undefined || b === undefined || c === undefined || d === undefined) throw new Error('could not allocate ports');
  return [a, b, c, d];
}

function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Kills the JVMs of test runs whose owner died without a teardown (e.g. a killed test run). */
function cleanStaleRuns(): void {
  const root = join(cacheDir(), 'stack');
  if (!existsSync(root)) return;
  for (const entry of readdirSync(root)) {
    if (!entry.startsWith('run-')) continue;
    const ownerFile = join(root, entry, 'owner.json');
    try {
      const owner = JSON.parse(readFileSync(ownerFile, 'utf8')) as { owner: number; pids: number[] };
      if (isAlive(owner.owner)) continue;
      for (const pid of owner.pids) if (isAlive(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // no owner file: a finished run; its logs are dropped below
    }
    rmSync(join(root, entry), { recursive: true, force: true });
  }
}

/** The stack `npm run stack:up` left running, if all its processes are alive and it answers. */
export async function runningCliStack(): Promise<CliStackState | undefined> {
  const file = stackStateFile();
  if (!existsSync(file)) return undefined;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as CliStackState;
    if (!state.pids.every(isAlive)) return undefined;
    if (!(await registryAnswers(state.schemaRegistryUrl))) return undefined;
    return state;
  } catch {
    return undefined;
  }
}

/** Stops a stack started by `stack:up`. Returns false when none was recorded. */
export async function stopCliStack(): Promise<boolean> {
  const file = stackStateFile();
  if (!existsSync(file)) return false;
  const state = JSON.parse(readFileSync(file, 'utf8')) as CliStackState;
  await Promise.all(state.pids.map((pid) => stopPid(pid)));
  rmSync(join(state.workDir, 'kafka-data'), { recursive: true, force: true });
  rmSync(file, { force: true });
  return true;
}
