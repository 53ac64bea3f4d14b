import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function simulate(...args: string[]): { status: number | null; out: string } {
  const run = spawnSync(process.execPath, ['tools/simulate/main.ts', ...args], { cwd: ROOT, encoding: 'utf8' });
  return { status: run.status, out: run.stdout + run.stderr };
}

describe('npm run simulate', () => {
  it('runs schedules of the correct protocol and says how fast', { timeout: 60_000 }, () => {
    const { status, out } = simulate('--schedules', '300', '--seed', '10', '--lease-lapses', 'off', '--crashes-after-failure', 'off', '--repeat-keys', 'same');
    expect(out).toMatch(/schedules 300, violations 0, [\d,]+ schedules\/s, \d+\.\d s/);
    // Then as many schedules of the send path over several accounts (tools/simulate/failover.ts).
    expect(out).toMatch(/accounts: schedules 300 over 2–3 accounts \(shipped FailoverSender and GuardedSenders\), violations 0, [\d,]+ sent, [\d,]+ failovers/);
    // Then one schedule in ten of the shipped lane (tools/simulate/shipped-lane.ts).
    expect(out).toMatch(
      /shipped lane: schedules 30 \(SourcePipeline, PartitionOwnership, lanes, record handler, senders over simulated Kafka, consumer and service\), violations 0/,
    );
    expect(status).toBe(0);
    const partsOff = simulate('--schedules', '20', '--accounts', 'off', '--lane', 'off').out;
    expect(partsOff).not.toContain('accounts:');
    expect(partsOff).not.toContain('shipped lane:');
  });

  it('stops a variant at its first violation, with a trace and a replay command that replays it', () => {
    const { status, out } = simulate('--schedules', '100', '--variant', 'send-before-mark-commits', '--ledger', 'on', '--repeat-keys', 'same');
    expect(status).toBe(1);
    expect(out).toContain('VIOLATION at-most-one-send (seed ');
    expect(out).toContain('last 30 events:');
    expect(out).toContain('(stopped at the first violation)');
    const replay = /replay: npm run simulate -- (.*)/.exec(out)?.[1];
    if (replay === undefined) throw new Error(`no replay command in:\n${out}`);
    const again = simulate(...replay.split(' '));
    expect(again.status).toBe(1);
    const message = (text: string): string | undefined => /VIOLATION \S+ \(seed \d+\)[^\n]*/.exec(text)?.[0];
    expect(message(again.out)).toBe(message(out));
  });

  it('counts the schedules that broke something by the invariant each broke first, with its first seed', () => {
    // Kafka's lost markers: the world where the correct protocol still breaks invariants (docs/partition-protocol.md).
    const { status, out } = simulate('--schedules', '300', '--ledger', 'on', '--lost-markers', 'on', '--accounts', 'off', '--lane', 'off');
    expect(status).toBe(1);
    const total = Number(/violations (\d+),/.exec(out)?.[1]);
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
});
