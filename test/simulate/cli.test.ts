import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function simulate(...args: string[]): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, ['tools/simulate/main.ts', ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

// Budgets of schedules, not timing targets.
describe('npm run simulate (the shipped code)', { timeout: 120_000 }, () => {
  it('runs schedules with the ledger on and off, says how fast and which moves of the tables the shipped machines made, then the accounts', () => {
    const { status, out } = simulate('--schedules', '40', '--seed', '10');
    expect(out).toMatch(/ledger on: schedules 30, violations 0, [\d,]+ schedules\/s, \d+\.\d s; [\d,]+ calls, /);
    expect(out).toMatch(/ledger off: schedules 10, violations 0, /);
    expect(out).toMatch(/transitions made: record \d+ of 26, claim \d+ of 11/);
    // Then as many schedules of the send path over several accounts (tools/simulate/failover.ts).
    expect(out).toMatch(/accounts: schedules 40 over 2–3 accounts \(shipped FailoverSender and GuardedSenders\), violations 0, [\d,]+ sent, [\d,]+ failovers/);
    expect(status).toBe(0);
    expect(simulate('--schedules', '4', '--accounts', 'off').out).not.toContain('accounts:');
  });

  it('stops a known-bad variant at its first violation, with what happened and a replay command that replays it', () => {
    const { status, out } = simulate('--schedules', '100', '--variant', 'send-before-mark-commits', '--ledger', 'on');
    expect(status).toBe(1);
    expect(out).toMatch(/VIOLATION \S+ \(seed \d+\)/);
    expect(out).toContain('(stopped at the first violation)');
    const replay = /replay: npm run simulate -- (.*)/.exec(out)?.[1];
    if (replay === undefined) throw new Error(`no replay command in:\n${out}`);
    const again = simulate(...replay.split(' '));
    expect(again.status).toBe(1);
    expect(again.out).toContain('what happened:');
    const message = (text: string): string | undefined => /VIOLATION \S+ \(seed \d+\)[^\n]*/.exec(text)?.[0];
    expect(message(again.out)).toBe(message(out));
  });

  it('counts the schedules that broke something by the invariant each broke first, with its first seed', () => {
    // Kafka's lost markers, results too: the world where the shipped code still breaks invariants (docs/partition-protocol.md).
    const { status, out } = simulate('--schedules', '300', '--ledger', 'on', '--lost-result-markers', 'on', '--accounts', 'off');
    expect(status).toBe(1);
    const total = Number(/ledger on: schedules 300, violations (\d+),/.exec(out)?.[1]);
    const byKind = /by invariant \(each schedule by its first\): (.*)/.exec(out)?.[1] ?? '';
    const counts = [...byKind.matchAll(/[\w-]+ (\d+) \(first seed \d+\)/g)].map((m) => Number(m[1]));
    expect(counts.length).toBeGreaterThan(0);
    expect(counts.reduce((a, b) => a + b, 0)).toBe(total);
  });

  it('refuses an unknown variant', () => {
    const { status, out } = simulate('--variant', 'nope');
    expect(status).toBe(2);
    expect(out).toContain('--variant must be one of correct, send-before-mark-commits');
  });

  it('splits the schedules over worker threads with the same outcome as one thread (--threads)', () => {
    const lines = (out: string): string[] =>
      out
        .split('\n')
        .filter((line) => line !== '')
        // Only the time taken may differ.
        .map((line) => line.replace(/, [\d,]+ schedules\/s, \d+\.\d s/, ''));
    const one = simulate('--schedules', '24', '--seed', '3', '--accounts', 'off');
    const two = simulate('--schedules', '24', '--seed', '3', '--accounts', 'off', '--threads', '2');
    expect(two.status).toBe(0);
    expect(lines(two.out)).toEqual(lines(one.out));
    expect(lines(two.out).join('\n')).toMatch(/ledger on: schedules 18, violations 0; [\d,]+ calls, /);
  });
});
