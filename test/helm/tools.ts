// Tools the chart tests build from the Go module proxy on first use and cache in
// ~/.cache/sms-worker/bin (like helm, see helm.ts): promtool, the Prometheus server and Helm 4.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './helm.ts';

/** A cold build on two busy cores (measured: promtool 9.5 min, Helm 4 about 8 min). */
export const TOOL_BUILD_TIMEOUT_MS = 20 * 60_000;

const SCRIPTS = {
  promtool: ['ensure-promtool.sh'],
  prometheus: ['ensure-promtool.sh', 'prometheus'],
  helm4: ['ensure-helm4.sh'],
} as const;

/**
 * Runs the tool's scripts/ensure-*.sh and returns the path it prints. Throws with the script's
 * stderr when no binary can be obtained: the tests must fail loudly, never skip.
 */
export function ensureBuiltTool(tool: keyof typeof SCRIPTS, timeoutMs = TOOL_BUILD_TIMEOUT_MS): string {
  const [script, ...args] = SCRIPTS[tool];
  const result = spawnSync('bash', [path.join(repoRoot, 'scripts', script), ...args], { encoding: 'utf8', timeout: timeoutMs });
  const toolPath = result.stdout.trim();
  if (result.status !== 0 || toolPath === '') {
    const reason = result.error ? String(result.error) : `exit ${String(result.status)}`;
    throw new Error(`scripts/${script} ${args.join(' ')} could not provide ${tool} (${reason}):\n${result.stderr}`);
  }
  return toolPath;
}
