import type net from 'node:net';
import { describe, expect, it } from 'vitest';
import type { ISocketFactoryArgs } from 'kafkajs';
import { seedBrokers } from '../../src/kafka/seed-brokers.ts';

describe('seedBrokers', () => {
  it('passes names and IPv4 addresses through, with the caller’s socket factory if any', () => {
    expect(seedBrokers(['broker-1:9092', '10.0.0.5:9093'])).toEqual({ brokers: ['broker-1:9092', '10.0.0.5:9093'] });
  });

  it('gives kafkajs an IPv6 seed under a stand-in name without a colon, and connects that name to the address', () => {
    const seen: ISocketFactoryArgs[] = [];
    const factory = (args: ISocketFactoryArgs): net.Socket => {
      seen.push(args);
      return {} as net.Socket;
    };
    const seeds = seedBrokers(['[::1]:9092', 'broker-1:9093'], factory);
    expect(seeds.brokers).toEqual(['--1.ipv6-seed.invalid:9092', 'broker-1:9093']);
    // kafkajs's own split: the host before the first colon.
    expect((seeds.brokers[0] as string).split(':')[0]).toBe('--1.ipv6-seed.invalid');
    const onConnect = (): void => undefined;
    seeds.socketFactory?.({ host: '--1.ipv6-seed.invalid', port: 9092, ssl: {}, onConnect });
    seeds.socketFactory?.({ host: 'broker-2', port: 9094, ssl: {}, onConnect });
    expect(seen.map(({ host, port }) => `${host}:${port}`)).toEqual(['::1:9092', 'broker-2:9094']);
  });
});
