// The chart installed on a real Kubernetes API server: kube-apiserver and etcd on loopback
// (test/helpers/kube-control-plane.ts; built or installed by scripts/ensure-kube-apiserver.sh and
// scripts/ensure-etcd.sh), with the CRDs of KEDA's ScaledObject and the Prometheus operator's
// ServiceMonitor and PrometheusRule as those projects ship them (scripts/ensure-crds.sh, pinned).
// Helm 4 installs with server-side apply and fieldValidation=Strict (its default), so the API server
// checks every field of every object; the tests also ask it directly (a strict server-side dry run
// of each rendered object), which does not depend on what the Helm in use sends (Helm 3 sends no
// field validation, so the server's default, Warn, drops a misspelled field: see the last test).
// No kubelet or controllers: the objects are stored and validated, nothing runs (so no --wait).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane, CONTROL_PLANE_BUILD_TIMEOUT_MS, ensureFromScript, type KubeResponse } from '../helpers/kube-control-plane.ts';
import { chartDir, ensureHelm, everythingOnValues, minimalValues, type K8sObject, parseManifests, releaseName, type RunResult } from './helm.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from './tools.ts';

const brokenFieldValues = path.join(import.meta.dirname, 'fixtures', 'broken-field-values.yaml');
const FIELD_MANAGER = 'sms-worker-install-test';

// The least a release needs: the provider's access key id (required unless existingSecret.name is set).
const defaults: readonly string[] = ['-f', minimalValues];
// Everything the chart can switch on together, the Grafana dashboard ConfigMap included.
const everythingOn: readonly string[] = ['-f', everythingOnValues, '--set', 'grafanaDashboard.enabled=true'];

let plane: ControlPlane | undefined;
let helm4 = '';
let helm3 = '';
let crdDir = '';
let helmHome = '';

beforeAll(async () => {
  // One after another: each may be a cold build on the same two cores.
  helm4 = ensureBuiltTool('helm4');
  helm3 = ensureHelm(TOOL_BUILD_TIMEOUT_MS);
  const etcd = ensureFromScript('ensure-etcd.sh');
  const kubeApiserver = ensureFromScript('ensure-kube-apiserver.sh');
  crdDir = ensureFromScript('ensure-crds.sh');
  helmHome = mkdtempSync(path.join(tmpdir(), 'sms-worker-helm-home-'));
  plane = await ControlPlane.start({ etcd, kubeApiserver });
}, 2 * TOOL_BUILD_TIMEOUT_MS + 3 * CONTROL_PLANE_BUILD_TIMEOUT_MS + 120_000);

afterAll(async () => {
  await plane?.stop();
  if (helmHome !== '') rmSync(helmHome, { recursive: true, force: true });
});

function cluster(): ControlPlane {
  if (!plane) throw new Error('the control plane did not start (see beforeAll)');
  return plane;
}

/** Helm (4 unless told) against the test API server, with its caches and config in a throwaway home. */
function helm(args: readonly string[], binary = helm4): RunResult {
  const env = {
    ...process.env,
    HOME: helmHome,
    HELM_CACHE_HOME: path.join(helmHome, 'cache'),
    HELM_CONFIG_HOME: path.join(helmHome, 'config'),
    HELM_DATA_HOME: path.join(helmHome, 'data'),
    KUBECACHEDIR: path.join(helmHome, 'kube-cache'),
    KUBECONFIG: cluster().kubeconfig,
  };
  const result = spawnSync(binary, [...args, '--kubeconfig', cluster().kubeconfig], { encoding: 'utf8', timeout: 180_000, env });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function expectHelmOk(result: RunResult, what: string): void {
  expect(result.status, `${what}:\n${result.stdout}\n${result.stderr}`).toBe(0);
}

/** What the release creates: `helm template` with the same release name, namespace and values. */
/** The objects `helm install` creates: those rendered, less the hooks (the `helm test` Pod is created only by `helm test`). */
function createdByInstall(objects: readonly K8sObject[]): K8sObject[] {
  return objects.filter((o) => o.metadata.annotations?.['helm.sh/hook'] === undefined);
}

function render(namespace: string, values: readonly string[]): K8sObject[] {
  const result = spawnSync(helm4, ['template', releaseName, chartDir, '--namespace', namespace, ...values], { encoding: 'utf8', timeout: 60_000 });
  expect(result.status, result.stderr).toBe(0);
  const objects = parseManifests(result.stdout);
  expect(objects.length).toBeGreaterThan(0);
  return objects;
}

function install(namespace: string, values: readonly string[], binary = helm4): RunResult {
  return helm(['install', releaseName, chartDir, '--namespace', namespace, '--create-namespace', ...values], binary);
}

const key = (o: K8sObject): string => `${o.apiVersion} ${o.kind} ${o.metadata.name}`;

interface StoredObject extends K8sObject {
  metadata: K8sObject['metadata'] & { managedFields?: { manager: string; operation: string }[] };
}

async function get(o: K8sObject, namespace: string): Promise<KubeResponse> {
  return cluster().api('GET', await cluster().pathOf(o.apiVersion, o.kind, o.metadata.namespace ?? namespace, o.metadata.name));
}

/** Every object exists on the server with the rendered apiVersion and kind, applied server-side by Helm. */
async function expectAllExist(objects: readonly K8sObject[], namespace: string): Promise<void> {
  for (const o of objects) {
    const response = await get(o, namespace);
    expect(response.status, `${key(o)}: ${response.text}`).toBe(200);
    const stored = response.body as StoredObject;
    expect({ apiVersion: stored.apiVersion, kind: stored.kind, name: stored.metadata.name, namespace: stored.metadata.namespace }).toEqual({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      namespace: o.metadata.namespace ?? namespace,
    });
    expect(
      stored.metadata.managedFields?.some((f) => f.manager === 'helm' && f.operation === 'Apply'),
      `${key(o)} managed fields: ${JSON.stringify(stored.metadata.managedFields)}`,
    ).toBe(true);
  }
}

/** The namespace holds exactly these objects and Helm's release records of revisions 1…`revisions` (Events aside). */
async function expectExactly(objects: readonly K8sObject[], namespace: string, revisions: number): Promise<void> {
  const records = Array.from({ length: revisions }, (_, i) => `Secret/sh.helm.release.v1.${releaseName}.v${i + 1}`);
  expect((await remainingObjects(namespace)).sort()).toEqual([...objects.map((o) => `${o.kind}/${o.metadata.name}`), ...records].sort());
}

async function expectAllGone(objects: readonly K8sObject[], namespace: string): Promise<void> {
  for (const o of objects) expect((await get(o, namespace)).status, key(o)).toBe(404);
}

/** Every object of every namespaced kind the server lists in `namespace` (Events aside), as "Kind/name". */
async function remainingObjects(namespace: string): Promise<string[]> {
  const found: string[] = [];
  for (const groupVersion of await cluster().preferredVersions()) {
    for (const resource of await cluster().resources(groupVersion)) {
      if (!resource.namespaced || resource.name.includes('/') || !resource.verbs.includes('list') || resource.kind === 'Event') continue;
      const collection = await cluster().pathOf(groupVersion, resource.kind, namespace);
      const response = await cluster().api('GET', collection);
      expect(response.status, `${collection}: ${response.text}`).toBe(200);
      for (const item of (response.body as { items: K8sObject[] }).items) found.push(`${resource.kind}/${item.metadata.name}`);
    }
  }
  return found;
}

/** Creates the namespace's `default` ServiceAccount unless it exists (what the service-account controller does). */
async function ensureDefaultServiceAccount(namespace: string): Promise<void> {
  const response = await cluster().api('POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    body: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace } },
  });
  expect([201, 409], response.text).toContain(response.status);
}

/** Creates the namespace unless it exists. */
async function ensureNamespace(name: string): Promise<void> {
  const response = await cluster().api('POST', '/api/v1/namespaces', { body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  expect([201, 409], response.text).toContain(response.status);
}

/** Asks the API server to create the object with the given field validation, without storing it. */
async function dryRunCreate(o: K8sObject, namespace: string, fieldValidation: 'Strict' | 'Warn' | 'Ignore'): Promise<KubeResponse> {
  const collection = await cluster().pathOf(o.apiVersion, o.kind, o.metadata.namespace ?? namespace);
  return cluster().api('POST', `${collection}?dryRun=All&fieldValidation=${fieldValidation}&fieldManager=${FIELD_MANAGER}`, { body: o });
}

/** The same by server-side apply (as Helm 4 sends objects). */
async function dryRunApply(o: K8sObject, namespace: string): Promise<KubeResponse> {
  const target = await cluster().pathOf(o.apiVersion, o.kind, o.metadata.namespace ?? namespace, o.metadata.name);
  return cluster().api('PATCH', `${target}?dryRun=All&fieldValidation=Strict&fieldManager=${FIELD_MANAGER}`, {
    body: o,
    contentType: 'application/apply-patch+yaml',
  });
}

interface Crd {
  metadata: { name: string };
  spec: { group: string; names: { kind: string }; versions: { name: string; served: boolean }[] };
  status?: { conditions?: { type: string; status: string }[] };
}

async function installCrds(): Promise<Crd[]> {
  const crds: Crd[] = [];
  for (const file of readdirSync(crdDir).filter((f) => f.endsWith('.yaml'))) {
    const text = readFileSync(path.join(crdDir, file), 'utf8');
    const crd = parse(text) as Crd;
    const target = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`;
    const applied = await cluster().api('PATCH', `${target}?fieldValidation=Strict&fieldManager=${FIELD_MANAGER}`, {
      body: text,
      contentType: 'application/apply-patch+yaml',
    });
    expect(applied.status, `${file}: ${applied.text}`).toBeLessThan(300);
    crds.push(crd);
  }
  // Established: the API server serves the kind (and its discovery lists it).
  const deadline = Date.now() + 60_000;
  for (const crd of crds) {
    for (;;) {
      const response = await cluster().api('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`);
      const conditions = (response.body as Crd).status?.conditions ?? [];
      if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`${crd.metadata.name} not established: ${JSON.stringify(conditions)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return crds;
}

describe('the chart on a real Kubernetes API server (Helm 4)', { timeout: 300_000 }, () => {
  it('the server reports the Kubernetes version the chart accepts and serves the built-in kinds the chart uses', async () => {
    const version = await cluster().api('GET', '/version');
    expect(version.status).toBe(200);
    expect((version.body as { gitVersion: string }).gitVersion).toMatch(/^v1\.(2[5-9]|[3-9]\d)\.\d+$/);
    for (const o of render('probe', defaults)) await cluster().pathOf(o.apiVersion, o.kind, 'probe');
  });

  it('with everything on, the install is refused until the ScaledObject, ServiceMonitor and PrometheusRule CRDs exist', async () => {
    const namespace = 'before-crds';
    const result = install(namespace, everythingOn);
    expect(result.status).not.toBe(0);
    for (const kind of ['ScaledObject', 'ServiceMonitor', 'PrometheusRule']) expect(result.stderr).toContain(`no matches for kind "${kind}"`);
    expect(await remainingObjects(namespace)).toEqual([]);
  });

  it('the pinned CRDs are created from their real definitions, established and serve the versions the chart renders', async () => {
    const crds = await installCrds();
    const served = Object.fromEntries(
      crds.map((crd) => [`${crd.spec.group} ${crd.spec.names.kind}`, crd.spec.versions.filter((v) => v.served).map((v) => v.name)]),
    );
    const custom = render('probe', everythingOn).filter((o) => /\.(sh|com)\//.test(o.apiVersion));
    expect(new Set(custom.map((o) => o.kind))).toEqual(new Set(['ScaledObject', 'ServiceMonitor', 'PrometheusRule']));
    for (const o of custom) {
      const [group, version] = o.apiVersion.split('/');
      expect(served[`${group} ${o.kind}`], `${o.apiVersion} ${o.kind}`).toContain(version);
    }
  });

  for (const [name, values] of [
    ['defaults', defaults],
    ['everything on', everythingOn],
  ] as const) {
    const slug = name.replace(/\W+/g, '-');

    it(`${name}: every rendered object passes the API server's strict server-side dry run, without warnings`, async () => {
      const namespace = `dry-run-${slug}`;
      await ensureNamespace(namespace);
      // A Pod (the `helm test` hook) is admitted only with its service account there: a real cluster's
      // service-account controller makes `default` in every namespace; this control plane runs no controllers.
      await ensureDefaultServiceAccount(namespace);
      for (const o of render(namespace, values)) {
        const response = await dryRunCreate(o, namespace, 'Strict');
        expect(response.status, `${key(o)}: ${response.text}`).toBe(201);
        expect(response.warnings, key(o)).toEqual([]);
      }
      expect(await remainingObjects(namespace)).toEqual(['ServiceAccount/default']);
    });

    it(`${name}: helm install into a fresh namespace succeeds; every rendered object exists with its kind; helm uninstall leaves nothing`, async () => {
      const namespace = `install-${slug}`;
      const installed = install(namespace, values);
      expectHelmOk(installed, 'helm install');
      expect(installed.stderr).not.toMatch(/warning/i);
      const objects = createdByInstall(render(namespace, values));
      await expectAllExist(objects, namespace);
      await expectExactly(objects, namespace, 1);

      expectHelmOk(helm(['uninstall', releaseName, '--namespace', namespace]), 'helm uninstall');
      await expectAllGone(objects, namespace);
      expect(await remainingObjects(namespace)).toEqual([]);
    });
  }

  it('helm upgrade from the defaults to everything on and back succeeds; each time exactly the rendered objects exist', async () => {
    const namespace = 'upgrade';
    const base = createdByInstall(render(namespace, defaults));
    const full = createdByInstall(render(namespace, everythingOn));
    const onlyIn = (a: readonly K8sObject[], b: readonly K8sObject[]): K8sObject[] => a.filter((o) => !b.some((p) => key(p) === key(o)));
    // The two sets differ both ways (e.g. the ScaledObject only with everything on, the chart's own Secret only without).
    expect(onlyIn(full, base).length).toBeGreaterThan(0);
    expect(onlyIn(base, full).length).toBeGreaterThan(0);

    expectHelmOk(install(namespace, defaults), 'helm install (defaults)');
    await expectAllExist(base, namespace);
    await expectExactly(base, namespace, 1);

    expectHelmOk(helm(['upgrade', releaseName, chartDir, '--namespace', namespace, ...everythingOn]), 'helm upgrade (everything on)');
    await expectAllExist(full, namespace);
    await expectAllGone(onlyIn(base, full), namespace);
    await expectExactly(full, namespace, 2);

    // --reset-values: without values, `helm upgrade` would reuse the last release's (everything on).
    expectHelmOk(helm(['upgrade', releaseName, chartDir, '--namespace', namespace, '--reset-values', ...defaults]), 'helm upgrade (back to the defaults)');
    await expectAllExist(base, namespace);
    await expectAllGone(onlyIn(full, base), namespace);
    await expectExactly(base, namespace, 3);

    const history = helm(['history', releaseName, '--namespace', namespace, '--output', 'json']);
    expectHelmOk(history, 'helm history');
    expect((JSON.parse(history.stdout) as { revision: number; status: string }[]).map((r) => [r.revision, r.status])).toEqual([
      [1, 'superseded'],
      [2, 'superseded'],
      [3, 'deployed'],
    ]);

    expectHelmOk(helm(['uninstall', releaseName, '--namespace', namespace]), 'helm uninstall');
    await expectAllGone([...base, ...full], namespace);
    expect(await remainingObjects(namespace)).toEqual([]);
    const list = helm(['list', '--namespace', namespace, '--short', ...['--deployed', '--failed', '--pending', '--superseded', '--uninstalled', '--uninstalling']]);
    expectHelmOk(list, 'helm list');
    expect(list.stdout.trim()).toBe('');
  });

  it('a deliberately misspelled field (test/helm/fixtures/broken-field-values.yaml) is refused by the API server', async () => {
    const namespace = 'broken-field';
    const values = [...defaults, '-f', brokenFieldValues];
    const deployment = render(namespace, values).find((o) => o.kind === 'Deployment');
    if (!deployment) throw new Error('no Deployment rendered');

    // Helm 4 sends the objects with fieldValidation=Strict: the install fails on the server's answer.
    const installed = install(namespace, values);
    expect(installed.status, installed.stdout).not.toBe(0);
    expect(installed.stderr).toMatch(/operater/);
    expect(installed.stderr).toMatch(/field not declared in schema|unknown field/);

    // The same object, asked directly: refused when strict (by create and by server-side apply), naming the field…
    await ensureNamespace(namespace);
    const create = await dryRunCreate(deployment, namespace, 'Strict');
    expect(create.status, create.text).toBe(400);
    expect((create.body as { message: string }).message).toContain('unknown field "spec.template.spec.tolerations[0].operater"');
    const apply = await dryRunApply(deployment, namespace);
    expect(apply.status, apply.text).toBeGreaterThanOrEqual(400);
    expect((apply.body as { message: string }).message).toContain('.spec.template.spec.tolerations[0].operater: field not declared in schema');
    // …and accepted without strict validation, the field dropped (with a warning at most): the check is what catches it.
    for (const fieldValidation of ['Warn', 'Ignore'] as const) {
      const lenient = await dryRunCreate(deployment, namespace, fieldValidation);
      expect(lenient.status, lenient.text).toBe(201);
      const spec = (lenient.body as { spec: { template: { spec: { tolerations: unknown[] } } } }).spec.template.spec;
      expect(spec.tolerations).toEqual([{ key: 'dedicated', effect: 'NoSchedule' }]);
      expect(lenient.warnings.join('\n')).toMatch(fieldValidation === 'Warn' ? /unknown field \\?"spec\.template\.spec\.tolerations\[0\]\.operater\\?"/ : /^$/);
    }
  });

  it('Helm 3 does not ask for strict validation: the same mistake installs with a warning and the field is dropped', async () => {
    // Why the install tests use Helm 4 and also ask the API server directly: Helm 3 (v3.22) creates
    // objects without fieldValidation, so the server's default (Warn) applies.
    const namespace = 'broken-field-helm3';
    const values = [...defaults, '-f', brokenFieldValues];
    const installed = install(namespace, values, helm3);
    expectHelmOk(installed, 'helm 3 install');
    expect(installed.stderr).toMatch(/unknown field \\?"spec\.template\.spec\.tolerations\[0\]\.operater\\?"/);
    const deployment = render(namespace, values).find((o) => o.kind === 'Deployment');
    if (!deployment) throw new Error('no Deployment rendered');
    const stored = (await get(deployment, namespace)).body as { spec: { template: { spec: { tolerations: unknown[] } } } };
    expect(stored.spec.template.spec.tolerations).toEqual([{ key: 'dedicated', effect: 'NoSchedule' }]);
    expectHelmOk(helm(['uninstall', releaseName, '--namespace', namespace], helm3), 'helm 3 uninstall');
    expect(await remainingObjects(namespace)).toEqual([]);
  });
});
