import { afterAll, describe, expect, it } from 'vitest';
import { createKafka, plaintextKafkaSettings } from '../../src/kafka/client.ts';
import { createLogger } from '../../src/observability/logger.ts';
import { loadConnectionConfig } from '../../src/config/connection.ts';
import { testBrokers } from '../helpers/kafka.ts';
import { TcpProxy } from '../helpers/tcp-proxy.ts';

const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const proxy of proxies) await proxy.close();
});

describe('an IPv6 seed broker ([::1]:port)', () => {
  it('is taken by the configuration and reached: a client bootstraps through it and reads the cluster', async () => {
    // The test broker listens on IPv4 loopback: a proxy on [::1] in front of it stands for a broker with an IPv6 address.
    const proxy = await TcpProxy.start(testBrokers()[0] as string, '::1');
    proxies.push(proxy);
    const seed = `[::1]:${proxy.port}`;
    const settings = loadConnectionConfig({ KAFKA_BROKERS: seed, SCHEMA_REGISTRY_URL: 'http://127.0.0.1:1' });
    expect(settings.kafka.brokers).toEqual([seed]);
    const admin = createKafka(plaintextKafkaSettings(settings.kafka.brokers, 'ipv6-seed'), createLogger('silent')).admin();
    await admin.connect();
    try {
      const cluster = await admin.describeCluster();
      expect(cluster.brokers.length).toBeGreaterThan(0);
    } finally {
      await admin.disconnect();
    }
  });
});
