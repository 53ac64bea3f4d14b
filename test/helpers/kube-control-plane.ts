// A real Kubernetes control plane for the chart's install tests: etcd and kube-apiserver on
// loopback, nothing else (no kubelet, no controllers: objects are stored and validated, never run).
// The binaries come from scripts/ensure-etcd.sh and scripts/ensure-kube-apiserver.sh; the CRDs the
// chart's optional objects need from scripts/ensure-crds.sh.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually, PollAbort } from '../../tools/poll.ts';
import { freePort, startDaemon, stopPid } from '../../tools/stack/processes.ts';

const repoRoot = path.resolve(import.meta.dirname, '..', '..');

/** A cold kube-apiserver build on two busy cores takes 5–10 minutes (see scripts/ensure-kube-apiserver.sh). */
export const CONTROL_PLANE_BUILD_TIMEOUT_MS = 25 * 60_000;

/**
 * Runs scripts/<script> and returns the path it prints. Throws with the script's stderr when it
 * fails: the install tests must fail loudly, never skip.
 */
export function ensureFromScript(script: 'ensure-etcd.sh' | 'ensure-kube-apiserver.sh' | 'ensure-crds.sh', timeoutMs = CONTROL_PLANE_BUILD_TIMEOUT_MS): string {
  const result = spawnSync('bash', [path.join(repoRoot, 'scripts', script)], { encoding: 'utf8', timeout: timeoutMs });
  const printed = result.stdout.trim();
  if (result.status !== 0 || printed === '') {
    const reason = result.error ? String(result.error) : `exit ${String(result.status)}`;
    throw new Error(`scripts/${script} failed (${reason}):\n${result.stderr}`);
  }
  return printed;
}

export interface KubeResponse {
  readonly status: number;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: unknown;
  /** Warning headers (e.g. a field dropped under fieldValidation=Warn). */
  readonly warnings: readonly string[];
}

export interface ApiResource {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
  readonly verbs: readonly string[];
}

export interface ControlPlaneOptions {
  readonly etcd: string;
  readonly kubeApiserver: string;
  /** How long etcd and then the API server may take to become ready (each). */
  readonly readyTimeoutMs?: number;
}

/** The API server's address, credentials and a REST client for it; `stop()` ends both processes and removes their files. */
export class ControlPlane {
  private readonly discovery = new Map<string, readonly ApiResource[]>();
  /** Holds the data, keys, certificates, kubeconfig and logs; removed by `stop()`. */
  readonly dir: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** A bearer token of a user in system:masters. */
  readonly token: string;
  /** The serving certificate's CA (the API server generates both). */
  readonly ca: Buffer;
  /** A kubeconfig file for Helm and kubectl: this server, its CA, the token. */
  readonly kubeconfig: string;
  private readonly etcd: ChildProcess;
  private readonly apiserver: ChildProcess;

  private constructor(fields: { dir: string; server: string; token: string; ca: Buffer; kubeconfig: string; etcd: ChildProcess; apiserver: ChildProcess }) {
    this.dir = fields.dir;
    this.server = fields.server;
    this.token = fields.token;
    this.ca = fields.ca;
    this.kubeconfig = fields.kubeconfig;
    this.etcd = fields.etcd;
    this.apiserver = fields.apiserver;
  }

  static async start(options: ControlPlaneOptions): Promise<ControlPlane> {
    const readyTimeoutMs = options.readyTimeoutMs ?? 90_000;
    const dir = mkdtempSync(path.join(tmpdir(), 'sms-worker-kube-'));
    let etcd: ChildProcess | undefined;
    let apiserver: ChildProcess | undefined;
    try {
      const [clientPort, peerPort, securePort] = [await freePort(), await freePort(), await freePort()];
      const etcdUrl = `http://127.0.0.1:${clientPort}`;
      const peerUrl = `http://127.0.0.1:${peerPort}`;
      const etcdLog = path.join(dir, 'etcd.log');
      etcd = startDaemon(
        options.etcd,
        [
          '--name=sms-worker-test',
          `--data-dir=${path.join(dir, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=sms-worker-test=${peerUrl}`,
          '--logger=zap',
          '--log-level=warn',
        ],
        { logFile: etcdLog, detached: false },
      );
      const etcdProcess = etcd;
      await eventually(
        async () => {
          assertRunning(etcdProcess, 'etcd', etcdLog);
          const response = await fetch(`${etcdUrl}/health`, { signal: AbortSignal.timeout(2_000) });
          const health = (await response.json()) as { health?: string };
          return health.health === 'true';
        },
        readyTimeoutMs,
        () => `etcd to report healthy at ${etcdUrl} (log: ${tail(etcdLog)})`,
      );

      // The service-account token signing key, an admin token (group system:masters) and the
      // directory where kube-apiserver writes its self-signed serving certificate.
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const serviceAccountKey = path.join(dir, 'service-account.key');
      writeFileSync(serviceAccountKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
      const token = randomBytes(24).toString('hex');
      const tokenFile = path.join(dir, 'tokens.csv');
      writeFileSync(tokenFile, `${token},sms-worker-test-admin,sms-worker-test-admin,"system:masters"\n`, { mode: 0o600 });
      const certDir = path.join(dir, 'certs');
      mkdirSync(certDir);
      const apiserverLog = path.join(dir, 'kube-apiserver.log');
      apiserver = startDaemon(
        options.kubeApiserver,
        [
          `--etcd-servers=${etcdUrl}`,
          '--bind-address=127.0.0.1',
          '--advertise-address=127.0.0.1',
          `--secure-port=${securePort}`,
          `--cert-dir=${certDir}`,
          `--token-auth-file=${tokenFile}`,
          '--authorization-mode=RBAC',
          '--service-account-issuer=https://kubernetes.default.svc',
          `--service-account-key-file=${serviceAccountKey}`,
          `--service-account-signing-key-file=${serviceAccountKey}`,
          // Only stored in Service objects: nothing routes to it (no kube-proxy, no nodes).
          '--service-cluster-ip-range=10.96.0.0/24',
          // No endpoints for the `kubernetes` Service: its address would be loopback, which Endpoints refuse.
          '--endpoint-reconciler-type=none',
          '--enable-priority-and-fairness=false',
          '--profiling=false',
        ],
        { logFile: apiserverLog, detached: false },
      );
      const server = `https://127.0.0.1:${securePort}`;
      const certFile = path.join(certDir, 'apiserver.crt');
      const apiserverProcess = apiserver;
      const ca = await eventually(
        () => {
          assertRunning(apiserverProcess, 'kube-apiserver', apiserverLog);
          return existsSync(certFile) ? readFileSync(certFile) : undefined;
        },
        readyTimeoutMs,
        () => `kube-apiserver to write ${certFile} (log: ${tail(apiserverLog)})`,
      );
      const kubeconfig = path.join(dir, 'kubeconfig');
      // JSON is YAML: kubectl, Helm and client-go read it as a kubeconfig.
      const config = {
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'test', cluster: { server, 'certificate-authority-data': ca.toString('base64') } }],
        users: [{ name: 'admin', user: { token } }],
        contexts: [{ name: 'test', context: { cluster: 'test', user: 'admin' } }],
        'current-context': 'test',
      };
      writeFileSync(kubeconfig, JSON.stringify(config, null, 2), { mode: 0o600 });
      const plane = new ControlPlane({ dir, server, token, ca, kubeconfig, etcd, apiserver });
      await eventually(
        async () => {
          assertRunning(apiserverProcess, 'kube-apiserver', apiserverLog);
          const ready = await plane.api('GET', '/readyz');
          return ready.status === 200;
        },
        readyTimeoutMs,
        () => `kube-apiserver to be ready at ${server}/readyz (log: ${tail(apiserverLog)})`,
      );
      return plane;
    } catch (error) {
      for (const child of [apiserver, etcd]) if (child?.pid !== undefined) await stopPid(child.pid, 10_000);
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  /** The last lines of the API server's log, for failure messages. */
  apiserverLog(): string {
    return tail(path.join(this.dir, 'kube-apiserver.log'));
  }

  /** One REST call with the admin token; a JSON body is sent as JSON unless `contentType` says otherwise. */
  async api(method: string, urlPath: string, options: { body?: unknown; contentType?: string } = {}): Promise<KubeResponse> {
    const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/json';
    return new Promise((resolve, reject) => {
      const req = request(new URL(urlPath, this.server), { method, headers, ca: this.ca, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = JSON.parse(text) as unknown;
          } catch {
            parsed = undefined;
          }
          const warning = res.headers.warning;
          const warnings = warning === undefined ? [] : Array.isArray(warning) ? warning : [warning];
          resolve({ status: res.statusCode ?? 0, text, body: parsed, warnings });
        });
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer within 30 s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  /** The resources of one group version (`v1`, `apps/v1`, …), from discovery; not cached while empty. */
  async resources(apiVersion: string): Promise<readonly ApiResource[]> {
    const known = this.discovery.get(apiVersion);
    if (known) return known;
    const response = await this.api('GET', apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`);
    if (response.status === 404) return [];
    if (response.status !== 200) throw new Error(`discovery of ${apiVersion}: HTTP ${response.status} ${response.text}`);
    const resources = (response.body as { resources: ApiResource[] }).resources;
    this.discovery.set(apiVersion, resources);
    return resources;
  }

  /** Every group version the server prefers (core v1 included). */
  async preferredVersions(): Promise<string[]> {
    const groups = await this.api('GET', '/apis');
    if (groups.status !== 200) throw new Error(`GET /apis: HTTP ${groups.status} ${groups.text}`);
    const list = groups.body as { groups: { preferredVersion: { groupVersion: string } }[] };
    return ['v1', ...list.groups.map((group) => group.preferredVersion.groupVersion)];
  }

  /**
   * The REST path of an object (or, without `name`, of its collection) of this apiVersion and kind;
   * throws when the server does not serve that kind.
   */
  async pathOf(apiVersion: string, kind: string, namespace: string | undefined, name?: string): Promise<string> {
    const resource = (await this.resources(apiVersion)).find((r) => r.kind === kind && !r.name.includes('/'));
    if (!resource) throw new Error(`the API server serves no ${kind} in ${apiVersion}`);
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const scope = resource.namespaced ? `/namespaces/${encodeURIComponent(namespace ?? 'default')}` : '';
    return `${base}${scope}/${resource.name}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  }

  /** Ends kube-apiserver, then etcd, and removes their data, keys and logs. */
  async stop(): Promise<void> {
    for (const child of [this.apiserver, this.etcd]) if (child.pid !== undefined) await stopPid(child.pid, 15_000);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function assertRunning(child: ChildProcess, name: string, logFile: string): void {
  if (child.exitCode !== null || child.signalCode !== null) {
    throw new PollAbort(`${name} exited (${String(child.exitCode ?? child.signalCode)}); log:\n${tail(logFile)}`);
  }
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
