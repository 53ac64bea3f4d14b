// Chart tests: lint, render and assert on the objects `helm template` produces. Needs a Helm v3
// binary; scripts/ensure-helm.sh provides one (building it with Go on first use, which takes a
// few minutes on a small machine). If that fails, every test here fails with the reason.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { K8sObject, RunResult } from './helm.ts';
import {
  chartDir,
  ensureHelm,
  everythingOnValues,
  namespace,
  parseManifests,
  releaseName,
  renderNotes,
  run,
  templateArgs,
  minimalValues,
} from './helm.ts';

const fullname = `${releaseName}-sms-worker`;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: unknown;
    fieldRef?: unknown;
  };
}

interface Probe {
  httpGet?: { path: string; port: string | number };
}

interface Container {
  name: string;
  image: string;
  args?: string[];
  ports: { name: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
}

interface Deployment extends K8sObject {
  spec: {
    replicas?: number;
    template: {
      metadata: { annotations?: Record<string, string>; labels: Record<string, string> };
      spec: {
        terminationGracePeriodSeconds: number;
        securityContext: Record<string, unknown>;
        containers: Container[];
        serviceAccountName: string;
        volumes?: { name: string; secret?: { secretName: string; defaultMode?: number; items?: { key: string; path: string }[] } }[];
      };
    };
  };
}

interface ConfigMap extends K8sObject {
  data: Record<string, string>;
}

interface Secret extends K8sObject {
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

interface ScaledObject extends K8sObject {
  spec: {
    minReplicaCount: number;
    maxReplicaCount: number;
    scaleTargetRef: { name: string };
    triggers: { type: string; metadata: Record<string, string>; authenticationRef?: { name: string } }[];
  };
}

interface PrometheusRule extends K8sObject {
  spec: { groups: { rules: { alert?: string; expr: string }[] }[] };
}

let helm = '';

beforeAll(() => {
  // Cold build of helm with `go install` can take several minutes on 2 cores.
  helm = ensureHelm(20 * 60_000);
}, 20 * 60_000 + 10_000);

function helmRun(args: readonly string[]): RunResult {
  expect(helm, 'helm binary (see beforeAll failure)').not.toBe('');
  return run(helm, args);
}

function render(...extra: string[]): K8sObject[] {
  const result = helmRun(templateArgs(extra));
  if (result.status !== 0) throw new Error(`helm template ${extra.join(' ')} failed:\n${result.stderr}`);
  return parseManifests(result.stdout);
}

function renderRaw(...extra: string[]): string {
  const result = helmRun(templateArgs(extra));
  if (result.status !== 0) throw new Error(`helm template ${extra.join(' ')} failed:\n${result.stderr}`);
  return result.stdout;
}

/** Render expecting failure; returns stderr. */
function renderFails(...extra: string[]): string {
  const result = helmRun(templateArgs(extra));
  expect(result.status, `helm template ${extra.join(' ')} should fail, got:\n${result.stdout.slice(0, 500)}`).not.toBe(0);
  return result.stderr;
}

function ofKind<T extends K8sObject>(objects: K8sObject[], kind: string): T[] {
  return objects.filter((o) => o.kind === kind) as T[];
}

function single<T extends K8sObject>(objects: K8sObject[], kind: string): T {
  const found = ofKind<T>(objects, kind);
  expect(found, `exactly one ${kind}`).toHaveLength(1);
  return found[0] as T;
}

/** Objects of the delivery-receipts receiver (its own component label). */
function isReceipts(o: K8sObject): boolean {
  return o.metadata.labels?.['app.kubernetes.io/component'] === 'receipts';
}

function workerContainer(deployment: Deployment): Container {
  const container = deployment.spec.template.spec.containers.find((c) => c.name === 'sms-worker');
  expect(container, 'container sms-worker').toBeDefined();
  return container as Container;
}

function envVar(container: Container, name: string): EnvVar | undefined {
  return container.env?.find((e) => e.name === name);
}

const secretEnvNames = [
  'PROVIDER_ACCESS_KEY_ID',
  'PROVIDER_ACCESS_KEY_SECRET',
  'KAFKA_SASL_PASSWORD',
  'SCHEMA_REGISTRY_PASSWORD',
] as const;

describe('helm chart sms-worker', { timeout: 60_000 }, () => {
  describe('lint', () => {
    it('passes helm lint --strict with default values', () => {
      const result = helmRun(['lint', '--strict', chartDir, '-f', minimalValues]);
      expect(result.status, result.stdout + result.stderr).toBe(0);
    });

    it('passes helm lint --strict with ci/everything-on-values.yaml', () => {
      const result = helmRun(['lint', '--strict', chartDir, '-f', everythingOnValues]);
      expect(result.status, result.stdout + result.stderr).toBe(0);
    });
  });

  describe('defaults', () => {
    it('render the expected set of objects, all with the standard labels', () => {
      const objects = render();
      // The Pod is `helm test`'s hook (created by `helm test` only); its labels are its own (tested below).
      expect(objects.map((o) => o.kind).sort()).toEqual(
        ['ConfigMap', 'Deployment', 'Pod', 'PodDisruptionBudget', 'Secret', 'Service', 'ServiceAccount'].sort(),
      );
      for (const o of objects.filter((p) => p.metadata.annotations?.['helm.sh/hook'] === undefined)) {
        expect(o.metadata.namespace, `${o.kind} namespace`).toBe(namespace);
        expect(o.metadata.labels).toMatchObject({
          'app.kubernetes.io/name': 'sms-worker',
          'app.kubernetes.io/instance': releaseName,
          'app.kubernetes.io/managed-by': 'Helm',
          'app.kubernetes.io/version': '0.1.0',
          'helm.sh/chart': 'sms-worker-0.1.0',
        });
      }
    });

    it('probe /healthz (liveness) and /readyz (readiness) on the named http port 9464', () => {
      const container = workerContainer(single<Deployment>(render(), 'Deployment'));
      const http = container.ports.find((p) => p.name === 'http');
      expect(http?.containerPort).toBe(9464);
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    });

    it('HTTP_PORT, the container port and the Service target agree', () => {
      const objects = render('--set', 'httpPort=9555');
      const container = workerContainer(single<Deployment>(objects, 'Deployment'));
      expect(single<ConfigMap>(objects, 'ConfigMap').data.HTTP_PORT).toBe('9555');
      expect(container.ports.find((p) => p.name === 'http')?.containerPort).toBe(9555);
      const service = single<K8sObject & { spec: { ports: { name: string; targetPort: string }[] } }>(objects, 'Service');
      expect(service.spec.ports[0]).toMatchObject({ name: 'http', targetPort: 'http' });
    });

    it('harden pod and container securityContext', () => {
      const deployment = single<Deployment>(render(), 'Deployment');
      const pod = deployment.spec.template.spec.securityContext;
      expect(pod).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(typeof pod.runAsUser).toBe('number');
      expect(pod.runAsUser).toBeGreaterThan(0);
      const container = workerContainer(deployment).securityContext;
      expect(container).toMatchObject({
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(typeof container?.runAsUser).toBe('number');
      expect(container?.runAsUser).toBeGreaterThan(0);
    });

    it('set resources and run the worker subcommand', () => {
      const container = workerContainer(single<Deployment>(render(), 'Deployment'));
      expect(container.resources?.requests).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
      expect(container.resources?.limits?.memory).toBeDefined();
      expect(container.args).toEqual(['run']);
      expect(container.image).toBe('ghcr.io/sms-worker/sms-worker:0.1.0');
    });

    it('load config from the ConfigMap via envFrom, with the documented defaults', () => {
      const objects = render();
      const configMap = single<ConfigMap>(objects, 'ConfigMap');
      const container = workerContainer(single<Deployment>(objects, 'Deployment'));
      expect(container.envFrom).toContainEqual({ configMapRef: { name: configMap.metadata.name } });
      expect(configMap.data).toMatchObject({
        KAFKA_BROKERS: 'kafka:9092',
        KAFKA_SASL_MECHANISM: 'none',
        COMMAND_TOPIC: 'sms.commands',
        RESULT_TOPIC: 'sms.results',
        DEAD_LETTER_TOPIC: 'sms.commands.dlq',
        CONSUMER_GROUP: 'sms-worker',
        TOPICS_PARTITIONS: '12',
        FUNDS_POLICY: 'pause',
        PARTIAL_RECIPIENTS: 'reject',
        SHUTDOWN_TIMEOUT_MS: '30000',
        HTTP_PORT: '9464',
      });
      for (const value of Object.values(configMap.data)) expect(typeof value).toBe('string');
    });
  });

  describe('memory', () => {
    const nodeOptions = (...extra: string[]): string | undefined => single<ConfigMap>(render(...extra), 'ConfigMap').data.NODE_OPTIONS;

    it('default to a 768Mi limit (peak RSS ≤ 80% of it, throughput ≥ 90% of uncapped, issue 23) with the V8 heap capped at 60% of it, a 32 MiB semi-space and a 4× growing factor', () => {
      const objects = render();
      expect(workerContainer(single<Deployment>(objects, 'Deployment')).resources?.limits?.memory).toBe('768Mi');
      const config = single<ConfigMap>(objects, 'ConfigMap').data;
      expect(config.NODE_OPTIONS).toBe('--max-old-space-size=460 --max-semi-space-size=32');
      expect(config.HEAP_GROWING_PERCENT).toBe('300');
    });

    it('render heapGrowingPercent as HEAP_GROWING_PERCENT', () => {
      expect(single<ConfigMap>(render('--set', 'heapGrowingPercent=0'), 'ConfigMap').data.HEAP_GROWING_PERCENT).toBe('0');
      expect(single<ConfigMap>(render('--set', 'heapGrowingPercent=150'), 'ConfigMap').data.HEAP_GROWING_PERCENT).toBe('150');
    });

    it('derive the heap cap from the memory limit in any unit', () => {
      expect(nodeOptions('--set', 'resources.limits.memory=1Gi')).toBe('--max-old-space-size=614 --max-semi-space-size=32');
      expect(nodeOptions('--set', 'resources.limits.memory=600M')).toBe('--max-old-space-size=343 --max-semi-space-size=32');
      expect(nodeOptions('--set', 'resources.limits.memory=536870912', '--set', 'heapPercentOfMemoryLimit=75')).toBe(
        '--max-old-space-size=384 --max-semi-space-size=32',
      );
      expect(nodeOptions('--set', 'semiSpaceMiB=0')).toBe('--max-old-space-size=460');
    });

    it('render no heap cap without a memory limit or at 0%, and leave NODE_OPTIONS from extraConfig alone', () => {
      expect(nodeOptions('--set', 'resources.limits=null')).toBeUndefined();
      expect(nodeOptions('--set', 'heapPercentOfMemoryLimit=0')).toBeUndefined();
      expect(nodeOptions('--set', 'extraConfig.NODE_OPTIONS=--max-old-space-size=99')).toBe('--max-old-space-size=99');
    });
  });

  describe('graceful shutdown', () => {
    it('defaults terminationGracePeriodSeconds above SHUTDOWN_TIMEOUT_MS', () => {
      const objects = render();
      const grace = single<Deployment>(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds;
      const shutdownMs = Number(single<ConfigMap>(objects, 'ConfigMap').data.SHUTDOWN_TIMEOUT_MS);
      expect(shutdownMs).toBe(30_000);
      expect(grace).toBe(45);
      expect(grace).toBeGreaterThan(shutdownMs / 1000);
    });

    it('derives both from shutdownTimeoutSeconds', () => {
      const objects = render('--set', 'shutdownTimeoutSeconds=90');
      expect(single<ConfigMap>(objects, 'ConfigMap').data.SHUTDOWN_TIMEOUT_MS).toBe('90000');
      expect(single<Deployment>(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds).toBe(105);
    });

    it('accepts an explicit grace period above the shutdown timeout and refuses one at or below it', () => {
      const objects = render('--set', 'terminationGracePeriodSeconds=31');
      expect(single<Deployment>(objects, 'Deployment').spec.template.spec.terminationGracePeriodSeconds).toBe(31);
      expect(renderFails('--set', 'terminationGracePeriodSeconds=30')).toMatch(
        /terminationGracePeriodSeconds \(30\) must be greater than shutdownTimeoutSeconds \(30\)/,
      );
    });
  });

  describe('secrets', () => {
    const secretValues = {
      providerAccessKeyId: 'AKID-TEST-123',
      providerAccessKeySecret: 'SK-TEST-456',
      kafkaSaslPassword: 'KAFKA-PW-789',
      schemaRegistryPassword: 'SR-PW-012',
    };
    const setArgs = [
      '--set',
      Object.entries(secretValues)
        .map(([k, v]) => `secrets.${k}=${v}`)
        .join(','),
      '--set',
      'kafka.sasl.mechanism=scram-sha-512,kafka.sasl.username=svc-user',
    ];

    it('never appear in plain text anywhere in the rendered manifests', () => {
      const raw = renderRaw(...setArgs);
      for (const value of Object.values(secretValues)) expect(raw).not.toContain(value);
    });

    it('live base64-encoded in the chart Secret only, and in no ConfigMap', () => {
      const objects = render(...setArgs);
      const secret = single<Secret>(objects, 'Secret');
      expect(secret.metadata.name).toBe(fullname);
      expect(secret.stringData).toBeUndefined();
      const decoded = Object.fromEntries(
        Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
      );
      expect(decoded).toEqual({
        PROVIDER_ACCESS_KEY_ID: 'AKID-TEST-123',
        PROVIDER_ACCESS_KEY_SECRET: 'SK-TEST-456',
        KAFKA_SASL_PASSWORD: 'KAFKA-PW-789',
        SCHEMA_REGISTRY_PASSWORD: 'SR-PW-012',
      });
      for (const configMap of ofKind<ConfigMap>(objects, 'ConfigMap')) {
        const text = JSON.stringify(configMap);
        for (const value of Object.values(secretValues)) {
          expect(text).not.toContain(value);
          expect(text).not.toContain(Buffer.from(value).toString('base64'));
        }
        for (const name of secretEnvNames) expect(Object.keys(configMap.data)).not.toContain(name);
      }
    });

    it('reach the container only through secretKeyRef to the chart Secret', () => {
      const objects = render(...setArgs);
      const container = workerContainer(single<Deployment>(objects, 'Deployment'));
      for (const name of secretEnvNames) {
        const env = envVar(container, name);
        expect(env?.value, `${name} must not be a literal`).toBeUndefined();
        expect(env?.valueFrom?.secretKeyRef).toMatchObject({ name: fullname, key: name });
      }
      expect(envVar(container, 'PROVIDER_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef?.optional).toBeUndefined();
      expect(envVar(container, 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef?.optional).toBe(false);
      expect(container.envFrom?.every((e) => e.secretRef === undefined || e.secretRef.name === fullname)).toBe(true);
    });

    it('roll the pods when a secret or the config changes (checksum annotations)', () => {
      const annotations = (objects: K8sObject[]) =>
        single<Deployment>(objects, 'Deployment').spec.template.metadata.annotations ?? {};
      const base = annotations(render());
      const otherSecret = annotations(render('--set', 'secrets.providerAccessKeyId=other'));
      const otherConfig = annotations(render('--set', 'logLevel=debug'));
      expect(base['checksum/config']).toMatch(/^[a-f0-9]{64}$/);
      expect(base['checksum/secret']).toMatch(/^[a-f0-9]{64}$/);
      expect(otherSecret['checksum/secret']).not.toBe(base['checksum/secret']);
      expect(otherSecret['checksum/config']).toBe(base['checksum/config']);
      expect(otherConfig['checksum/config']).not.toBe(base['checksum/config']);
    });

    it('with existingSecret: no Secret is rendered and env points at the existing keys', () => {
      const objects = render(
        '--set',
        'existingSecret.name=my-creds,existingSecret.keys.providerAccessKeyId=id,secrets.providerAccessKeyId=AKID-TEST-123',
      );
      expect(ofKind(objects, 'Secret')).toHaveLength(0);
      const raw = renderRaw('--set', 'existingSecret.name=my-creds,secrets.providerAccessKeyId=AKID-TEST-123');
      expect(raw).not.toContain('AKID-TEST-123');
      const deployment = single<Deployment>(objects, 'Deployment');
      const container = workerContainer(deployment);
      expect(envVar(container, 'PROVIDER_ACCESS_KEY_ID')?.valueFrom?.secretKeyRef).toEqual({ name: 'my-creds', key: 'id' });
      expect(envVar(container, 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef).toMatchObject({
        name: 'my-creds',
        key: 'KAFKA_SASL_PASSWORD',
      });
      expect(deployment.spec.template.metadata.annotations?.['checksum/secret']).toBeUndefined();
    });

    it('refuse a missing access key id without existingSecret', () => {
      expect(renderFails('--set', 'secrets.providerAccessKeyId=')).toMatch(/secrets\.providerAccessKeyId is required/);
    });

    it('refuse SASL without a password (chart Secret) or without a username', () => {
      expect(renderFails('--set', 'kafka.sasl.mechanism=plain,kafka.sasl.username=u')).toMatch(/kafkaSaslPassword/);
      expect(renderFails('--set', 'kafka.sasl.mechanism=plain,secrets.kafkaSaslPassword=p')).toMatch(/username/);
    });

    it('refuse secret-looking keys in extraConfig (it goes into the ConfigMap)', () => {
      expect(renderFails('--set', 'extraConfig.KAFKA_SASL_PASSWORD=x')).toMatch(/looks like a secret/);
      expect(renderFails('--set', 'extraConfig.MY_API_TOKEN=x')).toMatch(/looks like a secret/);
    });
  });

  describe('values.schema.json', () => {
    it('is draft-07 with additionalProperties false at the top level', () => {
      const schema = JSON.parse(readFileSync(`${chartDir}/values.schema.json`, 'utf8')) as Record<string, unknown>;
      expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
      expect(schema.additionalProperties).toBe(false);
    });

    it.each([
      [['--set', 'fundsPolicy=bogus'], /fundsPolicy/],
      [['--set', 'replicaCount=-1'], /replicaCount/],
      [['--set', 'partialRecipients=all'], /partialRecipients/],
      [['--set', 'kafka.sasl.mechanism=gssapi'], /mechanism/],
      [['--set', 'kafka.brokers=null'], /brokers/],
      [['--set-json', 'kafka.brokers=[]'], /brokers/],
      [['--set', 'schemaRegistry.url=null'], /url/],
      [['--set', 'provider.baseUrl=null'], /baseUrl/],
      [['--set', 'provider.baseUrl=not-a-url'], /baseUrl/],
      [['--set', 'topics.partitions=0'], /partitions/],
      [['--set', 'shutdownTimeoutSeconds=ten'], /shutdownTimeoutSeconds/],
      [['--set', 'unknownKey=1'], /unknownKey/],
      [['--set', 'logLevel=loud'], /logLevel/],
    ])('rejects %j', (args, message) => {
      expect(renderFails(...args)).toMatch(message);
    });
  });

  describe('geo permissions', () => {
    const geoKeys = (data: Record<string, string>) => Object.keys(data).filter((k) => k.startsWith('GEO_')).sort();
    const workerRequired = { KAFKA_BROKERS: 'k:9092', SCHEMA_REGISTRY_URL: 'http://r:8081', PROVIDER_BASE_URL: 'https://p.example', PROVIDER_ACCESS_KEY_ID: 'x' };

    /** The commented example under "A safe setting" in values.yaml, as a values file. */
    function documentedSafeExample(): string {
      const lines = readFileSync(`${chartDir}/values.yaml`, 'utf8').split('\n');
      const start = lines.findIndex((line) => line.startsWith('#   geo:'));
      expect(start, 'values.yaml documents a safe geo setting').toBeGreaterThan(0);
      const example: string[] = [];
      for (const line of lines.slice(start)) {
        if (!line.startsWith('#   ')) break;
        example.push(line.slice(4));
      }
      return example.join('\n');
    }

    it('default: GEO_MODE enforce and no list (every region, as before)', () => {
      const data = single<ConfigMap>(render(), 'ConfigMap').data;
      expect(geoKeys(data)).toEqual(['GEO_MODE']);
      expect(data.GEO_MODE).toBe('enforce');
    });

    it('renders every list as the comma list the worker reads, and the worker accepts it', async () => {
      const objects = render(
        '--set',
        'geo.mode=monitor',
        '--set-json',
        'geo.allowedRegions=["CN","HK","US"]',
        '--set-json',
        'geo.deniedRegions=["001"]',
        '--set-json',
        'geo.text.allowedRegions=["CN","HK"]',
        '--set-json',
        'geo.text.deniedRegions=["US"]',
        '--set-json',
        'geo.voice.allowedRegions=["CN"]',
        '--set-json',
        'geo.voice.deniedRegions=["HK"]',
      );
      const data = single<ConfigMap>(objects, 'ConfigMap').data;
      expect(Object.fromEntries(geoKeys(data).map((k) => [k, data[k]]))).toEqual({
        GEO_MODE: 'monitor',
        GEO_ALLOWED_REGIONS: 'CN,HK,US',
        GEO_DENIED_REGIONS: '001',
        GEO_TEXT_ALLOWED_REGIONS: 'CN,HK',
        GEO_TEXT_DENIED_REGIONS: 'US',
        GEO_VOICE_ALLOWED_REGIONS: 'CN',
        GEO_VOICE_DENIED_REGIONS: 'HK',
      });
      const { loadConfig } = await import('../../src/config/index.ts');
      expect(loadConfig({ ...data, ...workerRequired }).validation.geo).toEqual({
        mode: 'monitor',
        all: { allowed: ['CN', 'HK', 'US'], denied: ['001'] },
        text: { allowed: ['CN', 'HK'], denied: ['US'] },
        voice: { allowed: ['CN'], denied: ['HK'] },
      });
    });

    it("the safe setting values.yaml documents renders, and the worker accepts it: texts to CN, HK, MO only, no non-geographic numbers", async () => {
      const dir = mkdtempSync(join(tmpdir(), 'geo-values-'));
      const file = join(dir, 'geo.yaml');
      writeFileSync(file, documentedSafeExample());
      try {
        const data = single<ConfigMap>(render('-f', file), 'ConfigMap').data;
        const { loadConfig } = await import('../../src/config/index.ts');
        const geo = loadConfig({ ...data, ...workerRequired }).validation.geo;
        expect(geo).toEqual({ mode: 'enforce', all: { denied: ['001'] }, text: { allowed: ['CN', 'HK', 'MO'] }, voice: {} });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it.each([
      [['--set', 'geo.mode=log'], /geo\.mode|mode/],
      [['--set-json', 'geo.allowedRegions=["cn"]'], /allowedRegions/],
      [['--set-json', 'geo.text.deniedRegions=["USA"]'], /deniedRegions/],
      [['--set-json', 'geo.voice.allowedRegions=[1]'], /allowedRegions/],
      [['--set-json', 'geo.deniedRegions=["US","US"]'], /deniedRegions/],
      [['--set-json', `geo.deniedRegions=${JSON.stringify(Array.from({ length: 251 }, (_, i) => String.fromCharCode(65 + Math.floor(i / 26), 65 + (i % 26))))}`], /deniedRegions/],
      [['--set', 'geo.other=1'], /other/],
    ])('values.schema.json rejects %j', (args, message) => {
      expect(renderFails(...args)).toMatch(message);
    });
  });

  describe('autoscaling', () => {
    it('KEDA: ScaledObject on command-topic lag, capped at the partition count; no fixed replicas', () => {
      const objects = render('--set', 'keda.enabled=true');
      const scaled = single<ScaledObject>(objects, 'ScaledObject');
      expect(scaled.apiVersion).toBe('keda.sh/v1alpha1');
      expect(scaled.spec.scaleTargetRef.name).toBe(fullname);
      expect(scaled.spec.maxReplicaCount).toBeLessThanOrEqual(12);
      const trigger = scaled.spec.triggers[0];
      expect(trigger?.type).toBe('kafka');
      expect(trigger?.metadata).toMatchObject({
        bootstrapServers: 'kafka:9092',
        consumerGroup: 'sms-worker',
        topic: 'sms.commands',
        lagThreshold: expect.stringMatching(/^\d+$/),
      });
      expect(single<Deployment>(objects, 'Deployment').spec.replicas).toBeUndefined();
      expect(ofKind(objects, 'HorizontalPodAutoscaler')).toHaveLength(0);
    });

    it('KEDA: maxReplicaCount equal to partitions renders, above it fails', () => {
      const ok = render('--set', 'keda.enabled=true,topics.partitions=24,keda.maxReplicaCount=24');
      expect(single<ScaledObject>(ok, 'ScaledObject').spec.maxReplicaCount).toBe(24);
      expect(renderFails('--set', 'keda.enabled=true,keda.maxReplicaCount=13')).toMatch(
        /keda\.maxReplicaCount \(13\) must not exceed topics\.partitions \(12\)/,
      );
    });

    it('HPA: renders without fixed replicas, also capped at the partition count', () => {
      const objects = render('--set', 'autoscaling.enabled=true');
      const hpa = single<K8sObject & { spec: { maxReplicas: number } }>(objects, 'HorizontalPodAutoscaler');
      expect(hpa.spec.maxReplicas).toBeLessThanOrEqual(12);
      expect(single<Deployment>(objects, 'Deployment').spec.replicas).toBeUndefined();
      expect(renderFails('--set', 'autoscaling.enabled=true,autoscaling.maxReplicas=20')).toMatch(/partitions/);
    });

    it('refuses HPA and KEDA together', () => {
      expect(renderFails('--set', 'autoscaling.enabled=true,keda.enabled=true')).toMatch(/mutually exclusive/);
    });
  });

  describe('priority command topic (topics.priorityCommand)', () => {
    const priorityKeys = (data: Record<string, string>) => Object.keys(data).filter((k) => k.startsWith('PRIORITY_')).sort();
    const on = ['--set', 'topics.priorityCommand=sms.codes'];

    it('is off by default: no PRIORITY_* variable, one KEDA trigger, no priority alert', () => {
      const objects = render('--set', 'keda.enabled=true,prometheusRule.enabled=true');
      expect(priorityKeys(single<ConfigMap>(objects, 'ConfigMap').data)).toEqual([]);
      expect(single<ScaledObject>(objects, 'ScaledObject').spec.triggers).toHaveLength(1);
      const alerts = single<PrometheusRule>(objects, 'PrometheusRule').spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
      expect(alerts).not.toContain('SmsWorkerPriorityTimeToSendHigh');
      // An empty topic is "off" too.
      expect(priorityKeys(single<ConfigMap>(render('--set', 'topics.priorityCommand='), 'ConfigMap').data)).toEqual([]);
    });

    it('set: renders the three variables, the consumer group derived from consumerGroup and always explicit', () => {
      expect(single<ConfigMap>(render(...on), 'ConfigMap').data).toMatchObject({
        COMMAND_TOPIC: 'sms.commands',
        CONSUMER_GROUP: 'sms-worker',
        PRIORITY_COMMAND_TOPIC: 'sms.codes',
        PRIORITY_CONSUMER_GROUP: 'sms-worker-priority',
        PRIORITY_LEDGER_TOPIC: 'sms.codes.ledger',
        PRIORITY_NORMAL_MIN_SHARE: '0.1',
      });
      expect(single<ConfigMap>(render(...on, '--set', 'consumerGroup=sms-prod'), 'ConfigMap').data.PRIORITY_CONSUMER_GROUP).toBe('sms-prod-priority');
      const custom = single<ConfigMap>(
        render(...on, '--set', 'priorityConsumerGroup=sms-codes,topics.priorityLedger=codes.ledger', '--set-json', 'priority.normalMinShare=0.25'),
        'ConfigMap',
      ).data;
      expect(Object.fromEntries(priorityKeys(custom).map((k) => [k, custom[k]]))).toEqual({
        PRIORITY_COMMAND_TOPIC: 'sms.codes',
        PRIORITY_CONSUMER_GROUP: 'sms-codes',
        PRIORITY_LEDGER_TOPIC: 'codes.ledger',
        PRIORITY_NORMAL_MIN_SHARE: '0.25',
      });
      expect(single<ConfigMap>(render(...on, '--set-json', 'priority.normalMinShare=0'), 'ConfigMap').data.PRIORITY_NORMAL_MIN_SHARE).toBe('0');
    });

    it('KEDA: a second kafka trigger on the priority topic with its group and its own lag threshold, the rest as the first', () => {
      const triggers = single<ScaledObject>(render('-f', everythingOnValues), 'ScaledObject').spec.triggers;
      expect(triggers).toHaveLength(2);
      const [normal, priority] = triggers;
      expect(normal?.metadata).toMatchObject({ topic: 'sms.commands', consumerGroup: 'sms-worker', lagThreshold: '500' });
      expect(priority?.type).toBe('kafka');
      expect(priority?.metadata).toMatchObject({ topic: 'sms.codes', consumerGroup: 'sms-worker-priority', lagThreshold: '25' });
      const { topic: _t1, consumerGroup: _g1, lagThreshold: _l1, ...normalRest } = normal?.metadata ?? {};
      const { topic: _t2, consumerGroup: _g2, lagThreshold: _l2, ...priorityRest } = priority?.metadata ?? {};
      expect(priorityRest).toEqual(normalRest);
      expect(priorityRest).toMatchObject({ activationLagThreshold: '0', offsetResetPolicy: 'latest', sasl: 'scram_sha512', tls: 'enable' });
      expect(priority?.authenticationRef).toEqual({ name: 'sms-worker-kafka-auth' });
      // The default target: far below the command topic's, codes scale out early.
      const defaults = single<ScaledObject>(render(...on, '--set', 'keda.enabled=true,priorityConsumerGroup=codes'), 'ScaledObject').spec.triggers;
      expect(defaults.map((t) => [t.metadata.topic, t.metadata.consumerGroup, t.metadata.lagThreshold])).toEqual([
        ['sms.commands', 'sms-worker', '100'],
        ['sms.codes', 'codes', '20'],
      ]);
      expect(defaults[1]?.authenticationRef).toBeUndefined();
    });

    it('the worker and KEDA name the same priority group', () => {
      const objects = render(...on, '--set', 'keda.enabled=true,consumerGroup=blue');
      const group = single<ConfigMap>(objects, 'ConfigMap').data.PRIORITY_CONSUMER_GROUP;
      expect(group).toBe('blue-priority');
      expect(single<ScaledObject>(objects, 'ScaledObject').spec.triggers[1]?.metadata.consumerGroup).toBe(group);
    });

    it.each([
      ['sms.commands', 'command'],
      ['sms.results', 'result'],
      ['sms.commands.dlq', 'deadLetter'],
      ['sms.commands.ledger', 'ledger'],
    ])('refuses a priority topic equal to another topic (%s = topics.%s)', (topic, name) => {
      expect(renderFails('--set', `topics.priorityCommand=${topic}`)).toContain(`topics.priorityCommand (${topic}) must differ from topics.${name}`);
    });

    it.each([
      ['sms.commands.ledger', 'ledger'],
      ['sms.codes', 'priorityCommand'],
      ['sms.results', 'result'],
    ])('refuses a priority ledger equal to another topic (%s = topics.%s): each command topic has its own', (topic, name) => {
      expect(renderFails(...on, '--set', `topics.priorityLedger=${topic}`)).toContain(`the priority topic's ledger (${topic}) must differ from topics.${name}`);
    });

    it('refuses a priority group equal to consumerGroup', () => {
      expect(renderFails(...on, '--set', 'priorityConsumerGroup=sms-worker')).toMatch(/priorityConsumerGroup \(sms-worker\) must differ from consumerGroup/);
    });

    it.each([
      [['--set-json', 'priority.normalMinShare=0.6'], /normalMinShare/],
      [['--set-json', 'priority.normalMinShare=-0.1'], /normalMinShare/],
      [['--set', 'priority.normalMinShare=half'], /normalMinShare/],
      [['--set', 'priority.other=1'], /other/],
      [['--set', 'topics.priorityCommand=sms codes'], /priorityCommand/],
      [['--set', 'keda.priorityLagThreshold=0'], /priorityLagThreshold/],
      [['--set-json', 'prometheusRule.priorityTimeToSendSeconds=0'], /priorityTimeToSendSeconds/],
    ])('values.schema.json rejects %j', (args, message) => {
      expect(renderFails(...args)).toMatch(message);
    });

    it('NOTES.txt names both topics and groups, where codes and bulk go, and both KEDA targets', () => {
      const notes = renderNotes(helm, ['-f', everythingOnValues]);
      expect(notes).toContain('It consumes sms.commands (group sms-worker) and the high-priority topic sms.codes (group sms-worker-priority)');
      expect(notes).toContain('Publish verification codes to sms.codes and bulk/campaign traffic to sms.commands');
      expect(notes).toContain('on lag of sms.commands (target 500 per replica) and of sms.codes (target 25 per replica; the larger count wins)');
      expect(renderNotes(helm, [])).not.toContain('priority');
    });
  });

  describe('everything on', () => {
    it('renders ServiceMonitor, PrometheusRule, ScaledObject, TLS and SASL with an existing Secret', () => {
      // The worker's objects; the receipts receiver (also on there) is checked in its own describe.
      const objects = render('-f', everythingOnValues).filter((o) => !isReceipts(o));
      expect(ofKind(objects, 'Secret')).toHaveLength(0);
      expect(ofKind(objects, 'HorizontalPodAutoscaler')).toHaveLength(0);
      const scaled = single<ScaledObject>(objects, 'ScaledObject');
      const configMap = single<ConfigMap>(objects, 'ConfigMap');
      expect(scaled.spec.maxReplicaCount).toBeLessThanOrEqual(Number(configMap.data.TOPICS_PARTITIONS));
      expect(configMap.data).toMatchObject({
        KAFKA_SSL: 'true',
        KAFKA_SSL_CA_FILE: '/etc/sms-worker/kafka-tls/ca.crt',
        KAFKA_SASL_MECHANISM: 'scram-sha-512',
        KAFKA_SASL_USERNAME: 'sms-worker',
      });
      const deployment = single<Deployment>(objects, 'Deployment');
      expect(deployment.spec.template.spec.volumes).toContainEqual(
        expect.objectContaining({ name: 'kafka-tls', secret: expect.objectContaining({ secretName: 'sms-worker-kafka-tls' }) }),
      );
      const container = workerContainer(deployment);
      // The existing Secret as files (secretsAsFiles): every key it names, under the variable's name.
      expect(deployment.spec.template.spec.volumes?.find((v) => v.name === 'secrets')?.secret).toMatchObject({
        secretName: 'sms-worker-credentials',
        items: [
          { key: 'kafka-password', path: 'KAFKA_SASL_PASSWORD' },
          { key: 'access-key-id', path: 'PROVIDER_ACCESS_KEY_ID' },
          { key: 'access-key-secret', path: 'PROVIDER_ACCESS_KEY_SECRET' },
          { key: 'registry-password', path: 'SCHEMA_REGISTRY_PASSWORD' },
        ],
      });
      for (const name of secretEnvNames) {
        expect(envVar(container, name), name).toBeUndefined();
        expect(envVar(container, `${name}_FILE`)?.value).toBe(`/etc/sms-worker/secrets/${name}`);
      }
      // The same values without secretsAsFiles: each from the existing Secret by reference.
      const byEnv = workerContainer(single<Deployment>(render('-f', everythingOnValues, '--set', 'secretsAsFiles=false').filter((o) => !isReceipts(o)), 'Deployment'));
      for (const name of secretEnvNames) expect(envVar(byEnv, name)?.valueFrom?.secretKeyRef?.name).toBe('sms-worker-credentials');
      const service = single<K8sObject & { spec: { ports: { name: string }[] } }>(objects, 'Service');
      const monitor = single<K8sObject & { spec: { endpoints: { port: string; path: string }[] } }>(
        objects,
        'ServiceMonitor',
      );
      expect(monitor.spec.endpoints[0]).toMatchObject({ port: service.spec.ports[0]?.name, path: '/metrics' });
      expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(
        Number(configMap.data.SHUTDOWN_TIMEOUT_MS) / 1000,
      );
    });

    it('PrometheusRule has the alerts that matter, on the worker metric names', () => {
      const rule = single<PrometheusRule>(render('-f', everythingOnValues), 'PrometheusRule');
      const rules = rule.spec.groups.flatMap((g) => g.rules);
      const byName = new Map(rules.filter((r) => r.alert !== undefined).map((r) => [r.alert, r.expr]));
      const expected: Record<string, RegExp> = {
        SmsWorkerConsumerLagGrowing: /sms_worker_consumer_lag\{/,
        SmsWorkerDeadLettering: /sms_worker_dead_lettered_total\{/,
        SmsWorkerPausedInsufficientFunds: /sms_worker_paused\{[^}]*reason="insufficient_funds"/,
        SmsWorkerCircuitOpen: /sms_worker_paused\{[^}]*reason="circuit_open"/,
        SmsWorkerProviderRejecting: /sms_worker_paused\{[^}]*reason="provider_rejecting"/,
        SmsWorkerPartitionLost: /sms_worker_lost_partitions\{/,
        SmsWorkerProtocolViolation: /sms_worker_protocol_violations_total\{/,
        SmsWorkerRoutePaused: /sms_worker_route_paused_since_timestamp_seconds\{/,
        SmsWorkerPumpingSuspected: /sms_worker_velocity_blocks_total\{/,
        SmsWorkerSpendCapReached: /sms_worker_paused\{[^}]*reason="spend_cap"/,
        SmsWorkerUnknownOutcomes: /sms_worker_results_total\{[^}]*outcome="UNKNOWN"/,
        SmsWorkerProviderErrorRatioHigh: /sms_worker_provider_requests_total\{/,
        SmsWorkerNoProgress: /sms_worker_last_progress_timestamp_seconds\{/,
        SmsWorkerAbsent: /sms_worker_commands_consumed_total\{/,
        // everything-on sets topics.priorityCommand: the codes' time-to-send alert exists.
        SmsWorkerPriorityTimeToSendHigh: /sms_worker_time_to_send_seconds_bucket\{[^}]*priority="high"/,
        SmsWorkerResultsStalled: /sms_worker_results_total/,
        // everything-on has the receipts receiver on: its group exists.
        SmsReceiptsRejectingPosts: /sms_receipts_rejected_total\{[^}]*reason=~"unauthorized\|/,
        SmsReceiptsPublishFailing: /sms_receipts_rejected_total\{[^}]*reason="kafka_unavailable"/,
        SmsReceiptsAbsent: /absent\(sms_receipts_rejected_total\{/,
      };
      for (const [alert, expr] of Object.entries(expected)) {
        expect(byName.get(alert), `alert ${alert}`).toMatch(expr);
      }
      for (const [alert, expr] of byName) {
        if (alert === 'SmsWorkerResultsStalled') continue; // user-supplied additional rule
        // The receiver is another scrape job: its Service, <fullname>-receipts.
        const scrapeJob = alert?.startsWith('SmsReceipts') === true ? `${fullname}-receipts` : fullname;
        expect(expr, `${alert} is scoped to this release`).toContain(`namespace="${namespace}", job="${scrapeJob}"`);
      }
    });

    it('PrometheusRule keeps Prometheus template syntax in annotations intact', () => {
      const raw = renderRaw('-f', everythingOnValues, '--show-only', 'templates/prometheusrule.yaml');
      expect(raw).toContain('{{ $labels.namespace }}');
      expect(raw).toContain('{{ $value | humanize }}');
    });
  });

  describe('day two: the provider secret required, probes, secrets as files, NetworkPolicy, helm test', () => {
    it('refuses to render without the provider access key id unless existingSecret.name is set', () => {
      const stderr = renderFails('--set', 'secrets.providerAccessKeyId=');
      expect(stderr).toMatch(/secrets\.providerAccessKeyId is required \(or set existingSecret\.name/);
      const withExisting = single<Deployment>(render('--set', 'secrets.providerAccessKeyId=,existingSecret.name=my-creds'), 'Deployment');
      expect(workerContainer(withExisting).env?.find((e) => e.name === 'PROVIDER_ACCESS_KEY_ID')).toBeDefined();
    });

    it('a startup probe on /readyz holds liveness until the first ready, for five minutes at most', () => {
      const container = workerContainer(single<Deployment>(render(), 'Deployment'));
      expect(container.startupProbe).toEqual({ httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 60 });
    });

    it('secretsAsFiles: the Secret as a read-only volume, one file per secret given, and <NAME>_FILE variables instead of the values', () => {
      const deployment = single<Deployment>(render('--set', 'secretsAsFiles=true,secrets.kafkaSaslPassword=PW'), 'Deployment');
      const container = workerContainer(deployment);
      expect(container.env?.filter((e) => e.name.endsWith('_FILE'))).toEqual([
        { name: 'KAFKA_SASL_PASSWORD_FILE', value: '/etc/sms-worker/secrets/KAFKA_SASL_PASSWORD' },
        { name: 'PROVIDER_ACCESS_KEY_ID_FILE', value: '/etc/sms-worker/secrets/PROVIDER_ACCESS_KEY_ID' },
      ]);
      for (const name of secretEnvNames) expect(envVar(container, name), name).toBeUndefined();
      expect(container.volumeMounts).toContainEqual({ name: 'secrets', mountPath: '/etc/sms-worker/secrets', readOnly: true });
      // (defaultMode 0440 is octal to Kubernetes' YAML 1.1; this test's YAML 1.2 parser reads the digits as decimal.)
      expect(deployment.spec.template.spec.volumes?.find((v) => v.name === 'secrets')?.secret).toMatchObject({
        secretName: fullname,
        items: [
          { key: 'KAFKA_SASL_PASSWORD', path: 'KAFKA_SASL_PASSWORD' },
          { key: 'PROVIDER_ACCESS_KEY_ID', path: 'PROVIDER_ACCESS_KEY_ID' },
        ],
      });
    });

    it('a NetworkPolicy for the worker only when asked: metrics in, DNS and the Kafka, registry and service ports out', () => {
      expect(ofKind(render(), 'NetworkPolicy')).toEqual([]);
      const policy = single<K8sObject & { spec: Record<string, unknown> }>(
        render(
          '--set',
          'networkPolicy.enabled=true,kafka.brokers={kafka-0:9093,kafka-1:9093,[fd00::5]:9094},schemaRegistry.url=https://registry.kafka:8443,provider.baseUrl=https://sms.example.com',
        ).filter((o) => !isReceipts(o)),
        'NetworkPolicy',
      );
      expect(policy.spec['podSelector']).toEqual({ matchLabels: { 'app.kubernetes.io/name': 'sms-worker', 'app.kubernetes.io/instance': releaseName } });
      expect(policy.spec['policyTypes']).toEqual(['Ingress', 'Egress']);
      expect(policy.spec['ingress']).toEqual([{ ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: {} }] }]);
      const egress = policy.spec['egress'] as { ports: { port: number; protocol: string }[] }[];
      expect(egress.map((rule) => rule.ports.map((p) => `${p.port}/${p.protocol}`).join(','))).toEqual(['53/UDP,53/TCP', '9093/TCP,9094/TCP', '8443/TCP', '443/TCP']);
    });

    it('helm test: a Pod of the worker’s image that asks the Service for /readyz and /metrics, and that no worker selector picks', () => {
      const objects = render();
      const pod = single<K8sObject & { spec: { containers: Container[]; restartPolicy: string } }>(objects, 'Pod');
      expect(pod.metadata.annotations?.['helm.sh/hook']).toBe('test');
      expect(pod.spec.restartPolicy).toBe('Never');
      const [container] = pod.spec.containers;
      expect(container?.image).toBe(workerContainer(single<Deployment>(objects, 'Deployment')).image);
      const script = (container as Container & { command: string[] }).command.join(' ');
      expect(script).toContain(`http://${fullname}.${namespace}.svc:9464`);
      expect(script).toContain("check('/readyz', 'ready')");
      expect(script).toContain("check('/metrics', 'sms_worker_')");
      const selector = single<K8sObject & { spec: { selector: Record<string, string> } }>(objects, 'Service').spec.selector;
      expect(Object.entries(selector).every(([k, v]) => pod.metadata.labels?.[k] === v)).toBe(false);
      expect(ofKind(render('--set', 'tests.enabled=false'), 'Pod')).toEqual([]);
    });
  });

  describe('NOTES.txt', () => {
    it('tells the operator how to see it work', () => {
      const notes = renderNotes(helm, []);
      expect(notes).toContain(`port-forward service/${fullname} 9464:9464`);
      expect(notes).toContain('curl -s localhost:9464/metrics');
      expect(notes).toContain('/readyz');
      expect(notes).toMatch(new RegExp(`exec -it deployment/${fullname} -- node dist/cli/main\\.js tail`));
      expect(notes).not.toContain('replace-me');
    });

    it('drops the placeholder warnings and mentions scaling and alerts when configured', () => {
      const notes = renderNotes(helm, ['-f', everythingOnValues]);
      expect(notes).not.toContain('WARNING');
      expect(notes).toContain(`ScaledObject/${fullname}`);
      expect(notes).toContain(`PrometheusRule/${fullname}`);
    });
  });
});

describe('helm chart and worker configuration agree', { timeout: 60_000 }, () => {
  it('renders every non-secret worker setting that has a default, with the worker’s own default', async () => {
    const { envSchema, SECRET_VARIABLES } = await import('../../src/config/index.ts');
    const configMap = single<ConfigMap>(render(), 'ConfigMap');
    const mismatches: string[] = [];
    // PRIORITY_* are rendered only with topics.priorityCommand set: compare their defaults there.
    const priorityData = single<ConfigMap>(render('--set', 'topics.priorityCommand=sms.codes'), 'ConfigMap').data;
    for (const [name, schema] of Object.entries(envSchema.shape)) {
      if ((SECRET_VARIABLES as readonly string[]).includes(name)) {
        expect(configMap.data[name], `${name} is a secret`).toBeUndefined();
        continue;
      }
      // The topic and its group are set values (the group's default is derived), not defaults to compare.
      if (name === 'PRIORITY_COMMAND_TOPIC' || name === 'PRIORITY_CONSUMER_GROUP' || name === 'PRIORITY_LEDGER_TOPIC') continue;
      const parsed = schema.safeParse(undefined);
      if (!parsed.success || parsed.data === undefined) continue; // required or optional without default
      // Set by the chart beside the heap cap it renders (the worker alone keeps V8's own, 0).
      if (name === 'HEAP_GROWING_PERCENT') {
        expect([String(parsed.data), configMap.data[name]]).toEqual(['0', '300']);
        continue;
      }
      const rendered = name.startsWith('PRIORITY_') ? priorityData[name] : configMap.data[name];
      if (rendered !== String(parsed.data)) mismatches.push(`${name}: chart ${String(rendered)} vs worker ${String(parsed.data)}`);
    }
    expect(mismatches).toEqual([]);
  });
});

describe('helm chart: several accounts (docs/accounts.md)', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'sms-worker-chart-accounts-'));
  const values = join(dir, 'accounts.yaml');
  writeFileSync(
    values,
    [
      'accounts:',
      '  - name: backup-eu',
      '    existingSecret: sms-backup-eu',
      '    baseUrl: https://backup.example.com',
      '    ratePerSecond: 2.5',
      '  - name: asia',
      '    existingSecret: sms-asia',
      'accountFailover: [default, backup-eu, asia]',
      'provider:',
      '  baseUrl: https://sms.example.com',
      '  ratePerSecond: 40',
      'accountRoutes:',
      '  - operation: text',
      '    regions: [AU, NZ]',
      '    accounts: [backup-eu, default]',
      '',
    ].join('\n'),
  );

  it('renders a configuration the worker loads: the accounts, their URLs, rate limits and routes in the ConfigMap, their keys from their own Secrets only', async () => {
    const { loadConfig } = await import('../../src/config/index.ts');
    const objects = render('-f', values);
    const data = single<ConfigMap>(objects, 'ConfigMap').data;
    expect(JSON.stringify(data)).not.toMatch(/ACCESS_KEY/);
    const container = single<Deployment>(objects, 'Deployment').spec.template.spec.containers[0] as Container;
    const keys = (container.env ?? []).filter((e) => e.name.startsWith('ACCOUNT_'));
    expect(keys.map((e) => [e.name, e.valueFrom?.secretKeyRef])).toEqual([
      ['ACCOUNT_BACKUP_EU_ACCESS_KEY_ID', { name: 'sms-backup-eu', key: 'accessKeyId' }],
      ['ACCOUNT_BACKUP_EU_ACCESS_KEY_SECRET', { name: 'sms-backup-eu', key: 'accessKeySecret', optional: true }],
      ['ACCOUNT_ASIA_ACCESS_KEY_ID', { name: 'sms-asia', key: 'accessKeyId' }],
      ['ACCOUNT_ASIA_ACCESS_KEY_SECRET', { name: 'sms-asia', key: 'accessKeySecret', optional: true }],
    ]);
    // What the pod's environment would hold: the ConfigMap, and a value for each secret reference.
    const env = { ...data, PROVIDER_ACCESS_KEY_ID: 'k', ACCOUNT_BACKUP_EU_ACCESS_KEY_ID: 'k-eu', ACCOUNT_ASIA_ACCESS_KEY_ID: 'k-asia' };
    const config = loadConfig(env);
    expect(config.accounts.map((a) => [a.name, a.baseUrl, a.ratePerSecond])).toEqual([
      ['default', 'https://sms.example.com', 40],
      ['backup-eu', 'https://backup.example.com', 2.5],
      ['asia', 'https://sms.example.com', 0],
    ]);
    expect(config.routing.fallback).toEqual(['default', 'backup-eu', 'asia']);
    expect(config.routing.rules).toHaveLength(1);
  });

  it('the schema refuses an account named default, one without its Secret, an unknown field of a route and a region in lower case', () => {
    expect(renderFails('--set', 'accounts[0].name=default,accounts[0].existingSecret=s')).toContain('/accounts/0/name');
    expect(renderFails('--set', 'accounts[0].name=backup')).toContain('existingSecret');
    expect(renderFails('--set', 'accountRoutes[0].region=AU,accountRoutes[0].accounts[0]=default')).toContain('/accountRoutes/0');
    expect(renderFails('--set', 'accountRoutes[0].regions[0]=au,accountRoutes[0].accounts[0]=default')).toContain('/accountRoutes/0/regions/0');
  });
});

describe('helm chart: delivery receipts receiver', { timeout: 60_000 }, () => {
  const receiptsName = `${fullname}-receipts`;
  const TOKEN = 'RCPT-TOKEN-0123456789abcdef';
  const PASSWORD = 'RCPT-PASSWORD-0123456789';
  const enabled = ['--set', `receipts.enabled=true,receipts.secrets.pathToken=${TOKEN}`];

  interface ReceiptsContainer extends Container {
    name: string;
  }

  function receiptsObjects(...extra: string[]): K8sObject[] {
    return render(...extra).filter(isReceipts);
  }

  function receiptsContainer(objects: K8sObject[]): ReceiptsContainer {
    const deployment = single<Deployment>(objects.filter(isReceipts), 'Deployment');
    const container = deployment.spec.template.spec.containers.find((c) => c.name === 'receipts');
    expect(container, 'container receipts').toBeDefined();
    return container as ReceiptsContainer;
  }

  it('is off by default: nothing of it renders', () => {
    expect(receiptsObjects()).toEqual([]);
  });

  it('renders its own Deployment, Service, ConfigMap, Secret and PDB, with selectors apart from the worker’s', () => {
    const all = render(...enabled);
    const objects = all.filter(isReceipts);
    expect(objects.map((o) => o.kind).sort()).toEqual(['ConfigMap', 'Deployment', 'PodDisruptionBudget', 'Secret', 'Service'].sort());
    for (const o of objects) expect(o.metadata.name).toBe(receiptsName);
    const deployment = single<Deployment>(objects, 'Deployment');
    const podLabels = deployment.spec.template.metadata.labels;
    const workerService = all.find((o) => o.kind === 'Service' && !isReceipts(o)) as K8sObject & { spec: { selector: Record<string, string> } };
    const matches = (selector: Record<string, string>, labels: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels[k] === v);
    expect(matches(workerService.spec.selector, podLabels), 'the worker Service must not select receiver pods').toBe(false);
    const workerPods = single<Deployment>(all.filter((o) => !isReceipts(o)), 'Deployment').spec.template.metadata.labels;
    const service = single<K8sObject & { spec: { selector: Record<string, string>; ports: { name: string; targetPort: string }[] } }>(objects, 'Service');
    expect(matches(service.spec.selector, workerPods), 'the receiver Service must not select worker pods').toBe(false);
    expect(matches(service.spec.selector, podLabels)).toBe(true);
    expect(service.spec.ports.map((p) => [p.name, p.targetPort])).toEqual([
      ['reports', 'reports'],
      ['http', 'http'],
    ]);
  });

  it('runs `receipts` with probes on the metrics port, a hardened securityContext and a grace period above its shutdown timeout', () => {
    const objects = render(...enabled);
    const container = receiptsContainer(objects);
    expect(container.args).toEqual(['receipts']);
    expect(container.ports.map((p) => [p.name, p.containerPort])).toEqual([
      ['reports', 8080],
      ['http', 9465],
    ]);
    expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true });
    const deployment = single<Deployment>(objects.filter(isReceipts), 'Deployment');
    const configMap = single<ConfigMap>(objects.filter(isReceipts), 'ConfigMap');
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThan(Number(configMap.data.RECEIPTS_SHUTDOWN_TIMEOUT_MS) / 1000);
    // Kafka and registry settings are the worker's: its ConfigMap, then the receiver's own.
    expect(container.envFrom).toEqual([{ configMapRef: { name: fullname } }, { configMapRef: { name: receiptsName } }]);
  });

  it('renders every receiver setting that has a default with the receiver’s own default', async () => {
    const { receiptsEnvSchema, RECEIPTS_SECRET_VARIABLES } = await import('../../src/receipts/config.ts');
    const configMap = single<ConfigMap>(receiptsObjects(...enabled), 'ConfigMap');
    const mismatches: string[] = [];
    for (const [name, schema] of Object.entries(receiptsEnvSchema.shape)) {
      if ((RECEIPTS_SECRET_VARIABLES as readonly string[]).includes(name)) {
        expect(configMap.data[name], `${name} is a secret`).toBeUndefined();
        continue;
      }
      const parsed = (schema as { safeParse(v: undefined): { success: boolean; data?: unknown } }).safeParse(undefined);
      if (!parsed.success || parsed.data === undefined) continue;
      if (configMap.data[name] !== String(parsed.data)) mismatches.push(`${name}: chart ${String(configMap.data[name])} vs receiver ${String(parsed.data)}`);
    }
    expect(mismatches).toEqual([]);
  });

  it('keeps its token and password in its own Secret only, reached through secretKeyRef; no provider key in its pods', () => {
    const extra = ['--set', `receipts.enabled=true,receipts.secrets.pathToken=${TOKEN},receipts.secrets.basicAuthPassword=${PASSWORD},receipts.basicAuthUsername=svc`];
    const raw = renderRaw(...extra);
    expect(raw).not.toContain(TOKEN);
    expect(raw).not.toContain(PASSWORD);
    const objects = render(...extra);
    const secret = single<Secret>(objects.filter(isReceipts), 'Secret');
    expect(secret.data).toEqual({ RECEIPTS_PATH_TOKEN: Buffer.from(TOKEN).toString('base64'), RECEIPTS_BASIC_PASSWORD: Buffer.from(PASSWORD).toString('base64') });
    const container = receiptsContainer(objects);
    expect(envVar(container, 'RECEIPTS_PATH_TOKEN')?.valueFrom?.secretKeyRef).toMatchObject({ name: receiptsName, key: 'RECEIPTS_PATH_TOKEN' });
    expect(envVar(container, 'RECEIPTS_BASIC_PASSWORD')?.valueFrom?.secretKeyRef).toMatchObject({ name: receiptsName, key: 'RECEIPTS_BASIC_PASSWORD' });
    expect(envVar(container, 'PROVIDER_ACCESS_KEY_ID')).toBeUndefined();
    expect(single<ConfigMap>(objects.filter(isReceipts), 'ConfigMap').data.RECEIPTS_BASIC_USERNAME).toBe('svc');
  });

  it('refuses to render without a credential, and with report and metrics on one port', () => {
    expect(renderFails('--set', 'receipts.enabled=true')).toMatch(/never accepts unauthenticated reports/);
    expect(renderFails(...enabled, '--set', 'receipts.httpPort=8080')).toMatch(/must differ/);
    expect(renderFails('--set', 'receipts.enabled=true,receipts.secrets.pathToken=short')).toMatch(/schema/);
  });

  it('everything on: Ingress with TLS and the source allow-list to the report port only, NetworkPolicy, HPA, ServiceMonitor, existing Secret', () => {
    const objects = receiptsObjects('-f', everythingOnValues);
    expect(ofKind(objects, 'Secret')).toHaveLength(0);
    const ingress = single<
      K8sObject & {
        spec: {
          ingressClassName: string;
          tls: { hosts: string[]; secretName: string }[];
          rules: { host: string; http: { paths: { path: string; backend: { service: { name: string; port: { name: string } } } }[] } }[];
        };
      }
    >(objects, 'Ingress');
    expect(ingress.metadata.annotations?.['nginx.ingress.kubernetes.io/whitelist-source-range']).toBe('203.0.113.0/24,198.51.100.16/28');
    expect(ingress.spec.tls).toEqual([{ hosts: ['receipts.messaging.example.com'], secretName: 'receipts-messaging-tls' }]);
    const paths = ingress.spec.rules.flatMap((r) => r.http.paths);
    expect(paths.map((p) => [p.path, p.backend.service.name, p.backend.service.port.name])).toEqual([['/receipts', receiptsName, 'reports']]);
    const policy = single<K8sObject & { spec: { ingress: { ports: { port: string }[]; from: Record<string, unknown>[] }[] } }>(objects, 'NetworkPolicy');
    const reportsRule = policy.spec.ingress.find((r) => r.ports.some((p) => p.port === 'reports'));
    expect(reportsRule?.from).toEqual([
      { ipBlock: { cidr: '203.0.113.0/24' } },
      { ipBlock: { cidr: '198.51.100.16/28' } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } } },
    ]);
    const hpa = single<K8sObject & { spec: { scaleTargetRef: { name: string } } }>(objects, 'HorizontalPodAutoscaler');
    expect(hpa.spec.scaleTargetRef.name).toBe(receiptsName);
    expect(single<Deployment>(objects, 'Deployment').spec.replicas).toBeUndefined();
    const monitor = single<K8sObject & { spec: { endpoints: { port: string }[] } }>(objects, 'ServiceMonitor');
    expect(monitor.spec.endpoints.map((e) => e.port)).toEqual(['http']);
    const container = receiptsContainer(objects);
    expect(envVar(container, 'RECEIPTS_PATH_TOKEN')?.valueFrom?.secretKeyRef).toMatchObject({ name: 'sms-receipts-credentials', key: 'path-token' });
    expect(envVar(container, 'KAFKA_SASL_PASSWORD')?.valueFrom?.secretKeyRef).toMatchObject({ name: 'sms-worker-credentials', key: 'kafka-password' });
    expect(single<ConfigMap>(objects, 'ConfigMap').data.RECEIPTS_TRUSTED_PROXY_HOPS).toBe('1');
  });

  it('NOTES.txt tells where the service must post, and warns about an Ingress without an allow-list', () => {
    const notes = renderNotes(helm, [...enabled, '--set', 'receipts.ingress.enabled=true']);
    expect(notes).toContain('https://receipts.example.com/receipts/<path token>');
    expect(notes).toContain('tail --receipts');
    expect(notes).toContain('WARNING: receipts.ingress.sourceRanges is empty');
    expect(renderNotes(helm, ['-f', everythingOnValues])).not.toContain('WARNING');
  });
});
