// Helpers for the chart tests: obtain a Helm v3 binary and render the chart into objects.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const chartDir = path.join(repoRoot, 'helm', 'sms-worker');
export const everythingOnValues = path.join(chartDir, 'ci', 'everything-on-values.yaml');
/** The least a release needs (the provider's access key id, required unless existingSecret.name is set): "the defaults" of the tests. */
export const minimalValues = path.join(chartDir, 'ci', 'minimal-values.yaml');

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Run scripts/ensure-helm.sh and return the helm path. Throws with the script's stderr when no
 * binary can be obtained: the chart tests must fail loudly, never skip.
 */
export function ensureHelm(timeoutMs: number): string {
  const result = spawnSync('bash', [path.join(repoRoot, 'scripts', 'ensure-helm.sh')], {
    encoding: 'utf8',
    timeout: timeoutMs,
  });
  const helmPath = result.stdout.trim();
  if (result.status !== 0 || helmPath === '') {
    const reason = result.error ? String(result.error) : `exit ${String(result.status)}`;
    throw new Error(`scripts/ensure-helm.sh could not provide helm (${reason}):\n${result.stderr}`);
  }
  return helmPath;
}

export function run(helmPath: string, args: readonly string[]): RunResult {
  const result = spawnSync(helmPath, args, { encoding: 'utf8', timeout: 60_000, cwd: repoRoot });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export const releaseName = 'rel';
export const namespace = 'messaging';

/** `helm template` arguments for this chart with extra flags (e.g. --set, -f), on top of the required values (ci/minimal-values.yaml). */
export function templateArgs(extra: readonly string[]): string[] {
  return ['template', releaseName, chartDir, '--namespace', namespace, '-f', minimalValues, ...extra];
}

export function parseManifests(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((doc) => {
      if (doc.errors.length > 0) throw new Error(`invalid YAML from helm: ${doc.errors.map(String).join('; ')}`);
      return doc.toJS() as unknown;
    })
    .filter((o): o is K8sObject => typeof o === 'object' && o !== null && 'kind' in o);
}

/**
 * Render templates/NOTES.txt (which `helm template` never prints, and `helm install --dry-run`
 * needs a cluster for): copy the chart to a temp dir and wrap NOTES.txt into a ConfigMap.
 */
export function renderNotes(helmPath: string, extra: readonly string[]): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'sms-worker-notes-'));
  try {
    const chart = path.join(dir, 'sms-worker');
    cpSync(chartDir, chart, { recursive: true });
    const notes = readFileSync(path.join(chart, 'templates', 'NOTES.txt'), 'utf8');
    rmSync(path.join(chart, 'templates', 'NOTES.txt'));
    writeFileSync(
      path.join(chart, 'templates', '_notes-under-test.tpl'),
      `{{- define "notes-under-test" -}}\n${notes}\n{{- end -}}\n`,
    );
    writeFileSync(
      path.join(chart, 'templates', 'notes-under-test.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-under-test\ndata:\n  notes: {{ include "notes-under-test" . | quote }}\n',
    );
    const args = ['template', releaseName, chart, '--namespace', namespace, '-f', minimalValues, ...extra];
    const result = run(helmPath, [...args, '--show-only', 'templates/notes-under-test.yaml']);
    if (result.status !== 0) throw new Error(`rendering NOTES.txt failed:\n${result.stderr}`);
    const [configMap] = parseManifests(result.stdout) as (K8sObject & { data: { notes: string } })[];
    if (!configMap) throw new Error('NOTES.txt wrapper rendered nothing');
    return configMap.data.notes;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
