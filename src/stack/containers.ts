import type { StartedTestContainer, StartedNetwork } from 'testcontainers';

/** Images used when a Docker engine is reachable: Confluent Platform 8.1 ≈ Apache Kafka 4.1. */
export const KAFKA_IMAGE = process.env['SMS_WORKER_KAFKA_IMAGE'] ?? 'confluentinc/cp-kafka:8.1.0';
export const REGISTRY_IMAGE = process.env['SMS_WORKER_REGISTRY_IMAGE'] ?? 'confluentinc/cp-schema-registry:8.1.0';

/** testcontainers throws "Could not find a working container runtime strategy" without an engine. */
export async function dockerReachable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
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
    .withEnvironment({ KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0', KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1', KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1' })
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
