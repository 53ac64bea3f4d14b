import { describe, expect, it } from 'vitest';
import { chooseStack, parseForcedMode, type DockerProbe } from '../../tools/stack/choose.ts';

const engineWithImages: DockerProbe = { reachable: true, unavailable: [] };
const noEngine: DockerProbe = { reachable: false, detail: 'Could not find a working container runtime strategy' };
const airGapped: DockerProbe = {
  reachable: true,
  unavailable: [
    { image: 'confluentinc/cp-kafka:8.1.0', error: 'Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host' },
    { image: 'confluentinc/cp-schema-registry:8.1.0', error: 'no such host' },
  ],
};

describe('choosing how to provide the local stack', () => {
  it('uses Docker when the engine answers and has (or pulled) every image', () => {
    expect(chooseStack(undefined, engineWithImages)).toEqual({ mode: 'docker', reason: 'a Docker engine is reachable and has the images' });
  });

  it('falls back to local processes without a Docker engine, quoting why', () => {
    const choice = chooseStack(undefined, noEngine);
    expect(choice.mode).toBe('local');
    expect(choice.reason).toBe('no Docker engine is reachable (Could not find a working container runtime strategy)');
  });

  it('falls back to local processes when the engine answers but cannot pull the images (air-gapped), naming each image and its error', () => {
    const choice = chooseStack(undefined, airGapped);
    expect(choice.mode).toBe('local');
    expect(choice.reason).toContain('a Docker engine is reachable but cannot pull');
    expect(choice.reason).toContain('confluentinc/cp-kafka:8.1.0 (Get "https://registry-1.docker.io/v2/"');
    expect(choice.reason).toContain('confluentinc/cp-schema-registry:8.1.0 (no such host)');
  });

  it('falls back when only one image is missing', () => {
    expect(chooseStack(undefined, { reachable: true, unavailable: [{ image: 'testcontainers/ryuk:0.14.0', error: 'timeout' }] }).mode).toBe('local');
  });

  it('obeys SMS_WORKER_STACK whatever the probe found', () => {
    expect(chooseStack('local', engineWithImages)).toEqual({ mode: 'local', reason: 'SMS_WORKER_STACK=local' });
    expect(chooseStack('docker', airGapped)).toEqual({ mode: 'docker', reason: 'SMS_WORKER_STACK=docker' });
    expect(chooseStack('docker', undefined).mode).toBe('docker');
  });

  it('refuses to decide without a probe when no mode is forced', () => {
    expect(() => chooseStack(undefined, undefined)).toThrow(/must be probed/);
  });

  it('reads SMS_WORKER_STACK strictly: a typo stops the run instead of silently probing', () => {
    expect(parseForcedMode(undefined)).toBeUndefined();
    expect(parseForcedMode('')).toBeUndefined();
    expect(parseForcedMode('docker')).toBe('docker');
    expect(parseForcedMode('local')).toBe('local');
    expect(() => parseForcedMode('dokcer')).toThrow('SMS_WORKER_STACK must be docker or local (got "dokcer")');
  });
});
