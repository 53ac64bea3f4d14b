// Property-based tests of the pure contract functions over arbitrary values and sizes (issue 11):
// decoding never fails in an undocumented way, validation always gives exactly one outcome and
// never one problem per entry past a limit, and every result the worker builds for a command it
// did not send, encoded with the real Avro type, stays below maxEncodedResultBytes().
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BRANCH,
  CommandShapeError,
  commandFromAvro,
  commandToAvro,
  commandType,
  expiredResult,
  failedResult,
  rejectedResult,
  resultToAvro,
  resultType,
  unusableCommandResult,
  validateCommand,
} from '../../src/contracts/index.ts';
import type { CommandResult, SendCommand, ValidationPolicy } from '../../src/contracts/index.ts';
import { FIXED_LIMITS } from '../../src/contracts/limits.ts';
import { maxEncodedResultBytes } from '../../src/contracts/result-size.ts';
import { NOW } from './fixtures.ts';

const source = { topic: 't'.repeat(FIXED_LIMITS.topicChars), partition: 2_147_483_647, offset: '9223372036854775807' };
const BOUND = maxEncodedResultBytes();
const RUNS = { numRuns: 150 };

function encodedBytes(result: CommandResult): number {
  return resultType.toBuffer(resultToAvro(result)).length;
}

/** Any string: surrogate pairs, lone surrogates, control characters; short. */
const anyText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary-ascii', maxLength: 40 }),
);

/** A string of up to ~400,000 UTF-16 units, built by repetition so it is cheap to generate. */
const hugeText = fc
  .tuple(fc.string({ unit: 'binary', minLength: 1, maxLength: 4 }), fc.integer({ min: 0, max: 100_000 }))
  .map(([piece, times]) => piece.repeat(times));

const text = fc.oneof({ weight: 4, arbitrary: anyText }, { weight: 1, arbitrary: hugeText });

/** Recipients: real numbers, near misses, garbage; sometimes a list of tens of thousands. */
const recipient = fc.oneof(
  fc.constantFrom('13800138000', '+8613800138000', '18509872103', '+14155552671', '+447911123456', '0086138001380001', ''),
  fc.stringMatching(/^\+?[0-9]{0,20}$/),
  anyText,
  hugeText,
);
// Long lists repeat one short entry (any size of the list, not of every entry: memory stays small).
const shortRecipient = fc.oneof(fc.constantFrom('13800138000', '+14155552671', 'not-a-number'), anyText);
const recipients = fc.oneof(
  { weight: 4, arbitrary: fc.array(recipient, { maxLength: 30 }) },
  { weight: 1, arbitrary: fc.tuple(shortRecipient, fc.integer({ min: 0, max: 60_000 })).map(([r, n]) => Array.from({ length: n }, () => r)) },
);

/** A map of small arbitrary entries, or one of up to 20,000 generated entries with large values. */
const stringMap = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(anyText, anyText, { maxKeys: 10 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: 0, max: 10_000 }), fc.string({ unit: 'binary', maxLength: 4 }), fc.integer({ min: 0, max: 50 }))
      .map(([n, piece, length]) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`${piece}${i}`, piece.repeat(length)]))),
  },
);

const timestamp = fc.oneof(fc.constant(null), fc.integer({ min: NOW - 10_000, max: NOW + 10_000 }), fc.constant(NOW));

const textOperation = fc.record(
  {
    kind: fc.constant('text' as const),
    to: recipients,
    signature: fc.oneof(fc.constantFrom('合一短信', 'Acme', '【x】'), text),
    content: fc.option(fc.oneof(fc.constantFrom('您的验证码是 1234', 'Hello {name}'), text), { nil: undefined }),
    templateId: fc.option(fc.oneof(fc.constant('pub_verif_register'), text), { nil: undefined }),
    templateData: fc.option(stringMap, { nil: undefined }),
  },
  { requiredKeys: ['kind', 'to', 'signature'] },
);
const voiceOperation = fc.record({
  kind: fc.constant('voice' as const),
  to: recipient,
  code: fc.oneof(fc.constantFrom('1234', '123456'), fc.stringMatching(/^[0-9]{0,8}$/), text),
});

const command: fc.Arbitrary<SendCommand> = fc.record({
  commandId: fc.oneof({ weight: 3, arbitrary: fc.uuid() }, { weight: 2, arbitrary: text }),
  createdAt: fc.integer({ min: 0, max: NOW }),
  expiresAt: timestamp,
  operation: fc.oneof(textOperation, voiceOperation),
  metadata: stringMap,
});

/** A pair of geo lists over a few regions (sorted, distinct, as the config schema parses them), or none. */
const regionList = fc.option(
  fc.uniqueArray(fc.constantFrom('CN', 'US', 'GB', 'SG', 'AU', '001'), { maxLength: 4 }).map((codes) => [...codes].sort()),
  {
    nil: undefined,
  },
);
const regionRules = fc.record({ allowed: regionList, denied: regionList }, { requiredKeys: [] });

/** Any configuration the config schema accepts (src/config/schema.ts), biased to small limits. */
const policy: fc.Arbitrary<ValidationPolicy> = fc.record({
  homeRegion: fc.constantFrom('CN', 'US', 'GB'),
  maxRecipients: fc.integer({ min: 1, max: 1_000 }),
  partialRecipients: fc.constantFrom('reject' as const, 'send-valid' as const),
  maxContentChars: fc.integer({ min: 1, max: 100_000 }),
  maxContentSegments: fc.integer({ min: 1, max: 255 }),
  maxTemplateIdChars: fc.integer({ min: 1, max: 4_096 }),
  maxTemplateVariables: fc.integer({ min: 0, max: 1_000 }),
  maxTemplateKeyChars: fc.integer({ min: 1, max: 4_096 }),
  maxTemplateValueChars: fc.integer({ min: 1, max: 100_000 }),
  maxMetadataEntries: fc.integer({ min: 0, max: FIXED_LIMITS.metadataEntries }),
  maxMetadataBytes: fc.integer({ min: 0, max: FIXED_LIMITS.metadataBytes }),
  geo: fc.record({
    mode: fc.constantFrom('enforce' as const, 'monitor' as const),
    all: regionRules,
    text: regionRules,
    voice: regionRules,
  }),
});

/** Decoded values: real encodings of arbitrary commands, and arbitrary shapes that are almost commands. */
const decodedValue = fc.oneof(
  command.map((c): unknown => commandType.fromBuffer(commandType.toBuffer(commandToAvro(c)))),
  fc.record({
    commandId: fc.oneof(text, fc.anything()),
    createdAt: fc.oneof(fc.integer(), fc.anything()),
    expiresAt: fc.oneof(fc.constant(null), fc.record({ long: fc.oneof(fc.integer(), fc.anything()) }), fc.anything()),
    operation: fc.oneof(
      fc.record({
        [BRANCH.textMessage]: fc.record({ to: fc.oneof(recipients, fc.array(fc.anything(), { maxLength: 5 }), fc.anything()), signature: fc.anything() }),
      }),
      fc.record({ [BRANCH.voiceVerification]: fc.record({ to: fc.anything(), code: fc.anything() }) }),
      fc.anything(),
    ),
    metadata: fc.oneof(stringMap, fc.anything()),
  }),
  fc.anything(),
);

describe('commandFromAvro over arbitrary decoded values', () => {
  it('returns a command or throws CommandShapeError with a bounded message, nothing else', () => {
    fc.assert(
      fc.property(decodedValue, (value) => {
        try {
          commandFromAvro(value);
        } catch (error) {
          expect(error).toBeInstanceOf(CommandShapeError);
          expect((error as CommandShapeError).message.length).toBeLessThanOrEqual(FIXED_LIMITS.errorMessageChars);
        }
      }),
      RUNS,
    );
  });

  it('a COMMAND_UNUSABLE result of any refused value, keyed by any key, stays below the bound', () => {
    fc.assert(
      fc.property(decodedValue, text, (value, key) => {
        try {
          commandFromAvro(value);
        } catch (error) {
          if (!(error instanceof CommandShapeError)) throw error;
          const result = unusableCommandResult({ error, commandId: error.commandId ?? key, source, completedAt: NOW });
          expect(encodedBytes(result)).toBeLessThanOrEqual(BOUND);
        }
      }),
      RUNS,
    );
  });
});

describe('validateCommand over arbitrary commands and policies', () => {
  it('never throws and gives exactly one outcome: send, rejected (with problems) or expired', () => {
    fc.assert(
      fc.property(command, policy, (c, p) => {
        const validation = validateCommand(c, p, NOW);
        expect(['send', 'rejected', 'expired']).toContain(validation.kind);
        if (validation.kind === 'rejected') expect(validation.problems.length).toBeGreaterThan(0);
        if (validation.kind === 'expired') expect(c.expiresAt).not.toBeNull();
      }),
      RUNS,
    );
  });

  it('never gives one problem per entry past a limit: at most min(entries, maxRecipients) + a few', () => {
    fc.assert(
      fc.property(command, policy, (c, p) => {
        const validation = validateCommand(c, p, NOW);
        if (validation.kind !== 'rejected') return;
        const entries = c.operation.kind === 'text' ? Math.min(c.operation.to.length, p.maxRecipients) : 1;
        expect(validation.problems.length).toBeLessThanOrEqual(entries + 12);
      }),
      RUNS,
    );
  });

  it('a sendable command is within every limit of the policy', () => {
    fc.assert(
      fc.property(command, policy, (c, p) => {
        const validation = validateCommand(c, p, NOW);
        if (validation.kind !== 'send') return;
        expect(Object.keys(c.metadata).length).toBeLessThanOrEqual(p.maxMetadataEntries);
        expect([...c.commandId].length).toBeLessThanOrEqual(FIXED_LIMITS.commandIdChars);
        if (c.operation.kind === 'text') {
          expect(c.operation.to.length).toBeLessThanOrEqual(p.maxRecipients);
          expect([...(c.operation.content ?? '')].length).toBeLessThanOrEqual(p.maxContentChars);
          expect([...(c.operation.templateId ?? '')].length).toBeLessThanOrEqual(p.maxTemplateIdChars);
        }
      }),
      RUNS,
    );
  });

  it('the REJECTED or EXPIRED result, built and encoded for real, stays below the stated bound', () => {
    fc.assert(
      fc.property(command, policy, (c, p) => {
        const validation = validateCommand(c, p, NOW);
        const ctx = { command: c, source, completedAt: NOW };
        if (validation.kind === 'rejected') expect(encodedBytes(rejectedResult(ctx, validation.problems))).toBeLessThanOrEqual(BOUND);
        if (validation.kind === 'expired') expect(encodedBytes(expiredResult(ctx, validation.expiresAt))).toBeLessThanOrEqual(BOUND);
        // Whatever the service answered, a FAILED result of this command is bounded too.
        const failed = failedResult(ctx, { code: c.commandId, message: c.commandId, stage: 'PROVIDER', retryable: false, attempts: 1, requestId: c.commandId });
        expect(encodedBytes(failed)).toBeLessThanOrEqual(BOUND);
      }),
      RUNS,
    );
  });
});

describe('maxEncodedResultBytes', () => {
  // Every bounded text at its limit, in the characters that take the most UTF-8 bytes per unit.
  const threeBytes = '合';
  const worst: SendCommand = {
    commandId: '😀'.repeat(FIXED_LIMITS.commandIdChars),
    createdAt: NOW,
    expiresAt: Number.MAX_SAFE_INTEGER,
    operation: { kind: 'text', to: [], signature: 'x' },
    // Just within the hard caps: 256 entries, 65,536 bytes of 3-byte characters and ASCII keys.
    metadata: Object.fromEntries(
      Array.from({ length: FIXED_LIMITS.metadataEntries }, (_, i) => [
        String(i).padStart(4, '0'),
        threeBytes.repeat(Math.floor((FIXED_LIMITS.metadataBytes / FIXED_LIMITS.metadataEntries - 4) / 3)),
      ]),
    ),
  };
  const ctx = { command: worst, source, completedAt: 2 ** 52 };

  it('holds for the largest result the builders can make, and is within 10% of it', () => {
    const details = Array.from({ length: 100 }, () => ({ field: threeBytes.repeat(1000), problem: threeBytes.repeat(1000) }));
    const rejected = encodedBytes(rejectedResult(ctx, details));
    const failed = encodedBytes(
      failedResult(ctx, {
        code: threeBytes.repeat(1000),
        message: threeBytes.repeat(10_000),
        stage: 'OTHER',
        retryable: true,
        attempts: 2_147_483_647,
        requestId: threeBytes.repeat(1000),
      }),
    );
    const largest = Math.max(rejected, failed);
    expect(largest).toBeLessThanOrEqual(BOUND);
    expect(BOUND).toBeLessThan(largest * 1.1);
  });

  it('is the number docs/contracts.md states', () => {
    const page = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'contracts.md'), 'utf8');
    expect(page).toMatch(new RegExp(`at most \\*\\*${BOUND.toLocaleString('en-US')}\\s+bytes\\*\\* of Avro`));
  });
});
