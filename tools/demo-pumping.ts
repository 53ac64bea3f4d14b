// The demo's SMS-pumping act: a burst of codes to one premium-range prefix (the sandbox's UZ,
// +998 90) interleaved with a normal stream to other destinations. The worker runs with a velocity
// limit per prefix (DEMO_VELOCITY), so the burst is cut at the limit and the rest is REJECTED
// (DESTINATION_VELOCITY_LIMITED) before any money is spent, while the normal stream is all SENT.
import { randomUUID } from 'node:crypto';
import { pumpingBurst } from '../src/cli/pumping-burst.ts';
import { parseCommandLine } from '../src/cli/command-json.ts';
import type { SendCommand } from '../src/contracts/command.ts';
import type { CommandResult } from '../src/contracts/result.ts';
import type { CommandPublisher } from '../src/kafka/command-publisher.ts';
import { formatTable } from '../src/cli/result-table.ts';

/** The worker's velocity limit in the demo: 20 codes per number prefix (+ 3 digits) per day. */
export const DEMO_VELOCITY = { VELOCITY_PREFIX_DIGITS: '3', VELOCITY_PREFIX_PER_DAY: '20' } as const;
const BURST = 200;

/** A normal stream: 5 codes each to SG, US, GB and HK numbers (well under the limit per prefix). */
function normalStream(): SendCommand[] {
  const stems = ['+658123450', '+1415555260', '+44740012340', '+8525123450'];
  return stems.flatMap((stem) =>
    Array.from({ length: 5 }, (_, n) => ({
      commandId: `demo-normal-${randomUUID().slice(0, 8)}`,
      createdAt: Date.now(),
      expiresAt: null,
      metadata: { source: 'demo' },
      operation: { kind: 'text' as const, to: [`${stem}${n}`], signature: 'Acme', content: 'Your code is 482913' },
    })),
  );
}

/** Publishes the burst and the normal stream, waits for their results, and prints what became of each. */
export async function showPumpingBurst(
  publisher: CommandPublisher,
  results: ReadonlyMap<string, CommandResult>,
  say: (line: string) => void,
): Promise<boolean> {
  const burst = pumpingBurst(BURST).map((line) => {
    const parsed = parseCommandLine(line);
    if (!parsed.ok) throw new Error(parsed.error);
    return parsed.value.command;
  });
  const normal = normalStream();
  const all = burst.flatMap((command, i) => (i % 10 === 0 && normal[i / 10] !== undefined ? [normal[i / 10] as SendCommand, command] : [command]));
  await publisher.publish(all.map((command) => ({ command })));
  say(`published a pumping burst of ${BURST} codes to +998 9012… (UZ, a premium range) interleaved with ${normal.length} normal codes to SG, US, GB, HK`);
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && !all.every((c) => results.has(c.commandId))) await new Promise((resolve) => setTimeout(resolve, 200));
  if (!all.every((c) => results.has(c.commandId))) {
    say(`only ${all.filter((c) => results.has(c.commandId)).length} of ${all.length} burst and stream results arrived within 2 minutes`);
    return false;
  }
  const tally = (commands: SendCommand[]) => {
    const counts = new Map<string, number>();
    for (const c of commands) {
      const r = results.get(c.commandId);
      const key = `${r?.outcome ?? '?'}${r?.error === null || r?.error === undefined ? '' : ` ${r.error.code}`}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].map(([outcome, count]) => `${count} ${outcome}`).join(', ');
  };
  const limited = burst.map((c) => results.get(c.commandId)).find((r) => r?.error?.code === 'DESTINATION_VELOCITY_LIMITED');
  say(`velocity limit ${DEMO_VELOCITY.VELOCITY_PREFIX_PER_DAY} codes per prefix per day:`);
  console.log(
    formatTable([
      { stream: `pumping burst to +998 901 (${burst.length})`, results: tally(burst) },
      { stream: `normal codes (${normal.length})`, results: tally(normal) },
    ]),
  );
  if (limited !== undefined) console.log(`\nwhy: ${limited.error?.details?.[0]?.field}: ${limited.error?.details?.[0]?.problem}`);
  return true;
}
