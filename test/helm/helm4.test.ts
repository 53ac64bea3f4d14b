// The chart under both Helm majors in use: Helm 3 (scripts/ensure-helm.sh) and Helm 4
// (scripts/ensure-helm4.sh, built from helm.sh/helm/v4 on the Go module proxy and cached). Both
// lint it strictly and render the same objects from the same values; both refuse the same mistakes.
import { beforeAll, describe, expect, it } from 'vitest';
import { chartDir, ensureHelm, everythingOnValues, minimalValues, parseManifests, run, templateArgs } from './helm.ts';
import { ensureBuiltTool, TOOL_BUILD_TIMEOUT_MS } from './tools.ts';

let helm3 = '';
let helm4 = '';

beforeAll(() => {
  helm3 = ensureHelm(TOOL_BUILD_TIMEOUT_MS);
  helm4 = ensureBuiltTool('helm4');
}, 2 * TOOL_BUILD_TIMEOUT_MS + 10_000);

const valueSets: Record<string, string[]> = {
  defaults: ['-f', minimalValues],
  'everything on': ['-f', everythingOnValues],
  'everything on, with the Grafana dashboard': ['-f', everythingOnValues, '--set', 'grafanaDashboard.enabled=true'],
};

describe('Helm 3 and Helm 4', { timeout: 60_000 }, () => {
  it('the binaries are the majors they claim', () => {
    expect(run(helm3, ['version', '--short']).stdout).toMatch(/^v3\./);
    expect(run(helm4, ['version', '--short']).stdout).toMatch(/^v4\./);
  });

  for (const [name, values] of Object.entries(valueSets)) {
    it(`${name}: helm lint --strict passes with Helm 4, and both render the same objects`, () => {
      const lint = run(helm4, ['lint', '--strict', chartDir, ...values]);
      expect(lint.status, lint.stdout + lint.stderr).toBe(0);
      const [three, four] = [helm3, helm4].map((helm) => {
        const result = run(helm, templateArgs(values));
        expect(result.status, result.stderr).toBe(0);
        return parseManifests(result.stdout);
      });
      expect(four).toEqual(three);
      expect(four?.length).toBeGreaterThan(5);
    });
  }

  it('both refuse the same inconsistent values (HPA and KEDA together; an unknown key)', () => {
    for (const extra of [
      ['-f', everythingOnValues, '--set', 'autoscaling.enabled=true'],
      ['--set', 'noSuchValue=1'],
    ]) {
      for (const helm of [helm3, helm4]) {
        const result = run(helm, templateArgs(extra));
        expect(result.status, `${helm} ${extra.join(' ')}`).not.toBe(0);
      }
    }
  });
});
