import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../src/cli/command-json.ts';
import { burstProblem, pumpingBurst } from '../../src/cli/pumping-burst.ts';
import { DEFAULT_VALIDATION_POLICY, validateCommand } from '../../src/contracts/validate.ts';
import { destinationPrefix } from '../../src/worker/guard/velocity.ts';
import { textRoute } from '../../src/sandbox/pricing.ts';

/** A seeded generator, so the burst is the same at every run. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
    return s / 2_147_483_648;
  };
}

describe('produce --burst (pumping burst)', () => {
  it('makes valid commands to one premium-range prefix (UZ +998 90), each a different number', () => {
    const lines = pumpingBurst(200, undefined, seeded(7));
    expect(lines).toHaveLength(200);
    const numbers = new Set<string>();
    for (const line of lines) {
      const parsed = parseCommandLine(line);
      expect(parsed.ok).toBe(true);
      if (!parsed.ok) continue;
      const v = validateCommand(parsed.value.command, DEFAULT_VALIDATION_POLICY, Date.now());
      expect(v.kind).toBe('send');
      if (v.kind !== 'send') continue;
      const [d] = v.destinations;
      expect(d?.region).toBe('UZ');
      expect(destinationPrefix(d?.callingCode ?? '', d?.national ?? '', 2)).toBe('+998 90');
      numbers.add(d?.given ?? '');
    }
    expect(numbers.size).toBeGreaterThan(190);
    // The sandbox prices the range high: what the burst would cost unchecked.
    expect(textRoute('UZ')?.priceMicros).toBe(1_250_000n);
  });

  it('refuses counts and prefixes out of bounds', () => {
    expect(burstProblem('500', '+99890')).toBeUndefined();
    expect(burstProblem('0', '+99890')).toMatch(/^--burst: /);
    expect(burstProblem('1e3', '+99890')).toMatch(/^--burst: /);
    expect(burstProblem('10', '99890')).toMatch(/^--burst-prefix: /);
  });
});
