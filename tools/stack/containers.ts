import { createRequire } from 'node:module';
import type { ContainerRuntimeClient, ImageName as ImageNameClass, StartedTestContainer, StartedNetwork } from 'testcontainers';
import { within } from '../poll.ts';
import type { DockerProbe } from './choose.ts';

/** Images used when a Docker engine is reachable: Confluent Platform 8.1 ≈ Apache Kafka 4.1. */
export const KAFKA_IMAGE = process.env['SMS_WORKER_KAFKA_IMAGE'] ?? 'confluentinc/cp-kafka:8.1.0';
export const REGISTRY_IMAGE = process.env['SMS_WORKER_REGISTRY_IMAGE'] ?? 'confluentinc/cp-schema-registry:8.1.0';

/** Bounds one image pull in the probe: a firewall that drops packets must not hang the start. */
const PULL_TIMEOUT_MS = 300_000;

/** The Ryuk reaper testcontainers starts first (unless disabled): it must be there too. */
function reaperImage(): string | undefined {
  if (process.env['TESTCONTAINERS_RYUK_DISABLED'] === 'true') return undefined;
  try {
    const reaper = createRequire(import.meta.url)('testcontainers/build/reaper/reaper.js') as { getReaperImage?: () => string };
    return reaper.getReaperImage?.();
  } catch {
    return undefined;
  }
}

/**
 * Whether Docker can run the stack: the engine answers (testcontainers throws "Could not find a
 * working container runtime strategy" without one), and each image is present or pulls. Pulling
 * here is no extra work: testcontainers then finds the images present.
 */
export async function probeDocker(log: (line: string) => void): Promise<DockerProbe> {
  let client: ContainerRuntimeClient;
  let ImageName: typeof ImageNameClass;
  try {
    const testcontainers = await import('testcontainers');
    ImageName = testcontainers.ImageName;
    client = await testcontainers.getContainerRuntimeClient();
  } catch (error) {
    return { reachable: false, detail: firstLine(error) };
  }
  const unavailable: { image: string; error: string }[] = [];
  for (const image of [KAFKA_IMAGE, REGISTRY_IMAGE, reaperImage()]) {
    if (image === undefined) continue;
    const name = ImageName.fromString(image);
    try {
      if (await client.image.exists(name)) continue;
      log(`stack: pulling ${image}…`);
      await within(PULL_TIMEOUT_MS, `pulling ${image}`, client.image.pull(name));
    } catch (error) {
      unavailable.push({ image, error: firstLine(error) });
    }
  }
  return { reachable: true, unavailable };
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}

export interface ContainerStack {
  readonly kafkaBrokers: string;
  readonly schemaRegistryUrl: string;
  stop(): Promise<void>;
}

export async function startContainers(): Promise<ContainerStack> {
  // Imported lazily: a machine without Docker never loads the Docker client.
  const { GenericContainer, Network, Wait } = await import('testcontainers');
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const network: StartedNetwork = await new Network().start();
  const kafka: StartedTestContainer = await new KafkaContainer(KAFKA_IMAGE)
    .withKraft()
    .withNetwork(network)
    .withNetworkAliases('broker')
    .withEnvironment({
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
    })
    .start();
  const registry: StartedTestContainer = await new GenericContainer(REGISTRY_IMAGE)
    .withNetwork(network)
    .withExposedPorts(8081)
    .withEnvironment({
      SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS: 'PLAINTEXT://broker:9092',
      SCHEMA_REGISTRY_HOST_NAME: 'schema-registry',
      SCHEMA_REGISTRY_LISTENERS: 'http://0.0.0.0:8081',
    })
    .withWaitStrategy(Wait.forHttp('/subjects', 8081))
    .start();
  return {
    kafkaBrokers: `${kafka.getHost()}:${kafka.getMappedPort(9093)}`,
    schemaRegistryUrl: `http://${registry.getHost()}:${registry.getMappedPort(8081)}`,
    async stop() {
      await registry.stop();
      await kafka.stop();
      await network.stop();
    },
  };
}
