import { describe, expect, it } from 'vitest';
import { DEFAULT_VALIDATION_POLICY, RULES, validateCommand } from '../../src/contracts/index.ts';
import type { FieldProblem, SendCommand, Validation, ValidationPolicy } from '../../src/contracts/index.ts';
import { NOW, textCommand, voiceCommand } from './fixtures.ts';

const policy: ValidationPolicy = DEFAULT_VALIDATION_POLICY;
const sendValid: ValidationPolicy = { ...policy, partialRecipients: 'send-valid' };

function problemsOf(command: SendCommand, p: ValidationPolicy = policy): readonly FieldProblem[] {
  const result = validateCommand(command, p, NOW);
  return result.kind === 'rejected' ? result.problems : [];
}

function sent(result: Validation) {
  if (result.kind !== 'send') throw new Error(`expected send, got ${JSON.stringify(result)}`);
  return result;
}

describe('defaults', () => {
  it('are CN, 1000 recipients, reject, and the limits of the README', () => {
    expect(DEFAULT_VALIDATION_POLICY).toEqual({
      homeRegion: 'CN',
      maxRecipients: 1000,
      partialRecipients: 'reject',
      maxContentChars: 500,
      maxContentSegments: 8,
      maxTemplateIdChars: 128,
      maxTemplateVariables: 20,
      maxTemplateKeyChars: 64,
      maxTemplateValueChars: 500,
      maxMetadataEntries: 32,
      maxMetadataBytes: 4096,
      geo: { mode: 'enforce', all: {}, text: {}, voice: {} },
    });
  });
});

describe('expiry (checked before everything else)', () => {
  it.each([
    ['past', NOW - 1, 'expired'],
    ['exactly now', NOW, 'expired'],
    ['future', NOW + 1, 'send'],
    ['null', null, 'send'],
  ] as const)('%s → %s', (_label, expiresAt, kind) => {
    expect(validateCommand(textCommand({}, { expiresAt }), policy, NOW).kind).toBe(kind);
  });

  it('reports EXPIRED, not REJECTED, for an expired command that is also invalid', () => {
    const command = textCommand({ signature: 'x', to: [] }, { commandId: '', expiresAt: NOW - 5 });
    expect(validateCommand(command, policy, NOW)).toEqual({ kind: 'expired', expiresAt: NOW - 5 });
  });
});

describe('commandId', () => {
  it.each(['', '   '])('rejects %j', (commandId) => {
    expect(problemsOf(textCommand({}, { commandId }))).toEqual([{ field: 'commandId', problem: RULES.commandIdBlank.message() }]);
  });
});

describe('text: signature counted in Unicode code points', () => {
  it.each([
    ['a', 1, false],
    ['ab', 2, true],
    ['a'.repeat(16), 16, true],
    ['a'.repeat(17), 17, false],
    ['合', 1, false],
    ['合一', 2, true],
    ['合'.repeat(16), 16, true],
    ['合'.repeat(17), 17, false],
    ['😀😀', 2, true], // 4 UTF-16 units, 2 code points
    ['😀'.repeat(9), 9, true], // 18 UTF-16 units
  ])('%j (%i code points) accepted: %s', (signature, length, ok) => {
    const problems = problemsOf(textCommand({ signature }));
    expect(problems).toEqual(
      ok ? [] : [{ field: 'operation.signature', problem: `signature must be 2 to 16 characters (Unicode code points); got ${length}` }],
    );
  });

  it.each(['', '  ', '\u3000\u3000'])('rejects blank signature %j', (signature) => {
    expect(problemsOf(textCommand({ signature }))).toEqual([{ field: 'operation.signature', problem: 'signature must not be empty or whitespace only' }]);
  });
});

describe('text: exactly one of content and templateId', () => {
  const both = [{ field: 'operation', problem: 'exactly one of content and templateId must be given; got both' }];
  const neither = [
    {
      field: 'operation',
      problem: 'exactly one of content and templateId must be given; got neither (empty or whitespace-only strings count as absent)',
    },
  ];
  it.each([
    ['content only', { content: 'hi' }, []],
    ['templateId only', { content: undefined, templateId: 'T1' }, []],
    ['both', { content: 'hi', templateId: 'T1' }, both],
    ['neither', { content: undefined }, neither],
    ['empty content', { content: '' }, neither],
    ['whitespace-only content', { content: ' \n\t' }, neither],
    ['empty templateId', { content: undefined, templateId: '' }, neither],
    ['content and blank templateId', { content: 'hi', templateId: '  ' }, []],
  ])('%s', (_label, operation, expected) => {
    expect(problemsOf(textCommand(operation))).toEqual(expected);
  });

  it('sends content as given, without trimming', () => {
    const result = sent(validateCommand(textCommand({ content: '  hello  ' }), policy, NOW));
    expect(result.request).toEqual({
      operation: 'sms.message.send',
      body: { to: ['+8613800138000'], signature: '合一短信', content: '  hello  ' },
    });
  });
});

describe('text: templateData', () => {
  it('is refused without templateId', () => {
    expect(problemsOf(textCommand({ content: 'hi', templateData: { code: '1234' } }))).toEqual([
      { field: 'operation.templateData', problem: 'templateData is only allowed together with templateId' },
    ]);
  });

  it('is sent with templateId', () => {
    const result = sent(validateCommand(textCommand({ content: undefined, templateId: 'T1', templateData: { code: '1234' } }), policy, NOW));
    expect(result.request.body).toEqual({ to: ['+8613800138000'], signature: '合一短信', templateId: 'T1', templateData: { code: '1234' } });
  });

  it('counts as absent when empty: allowed without templateId and not sent with it', () => {
    expect(problemsOf(textCommand({ content: 'hi', templateData: {} }))).toEqual([]);
    const result = sent(validateCommand(textCommand({ content: undefined, templateId: 'T1', templateData: {} }), policy, NOW));
    expect(result.request.body).toEqual({ to: ['+8613800138000'], signature: '合一短信', templateId: 'T1' });
  });
});

describe('text: recipients', () => {
  it('normalises to E.164 and keeps international numbers', () => {
    const result = sent(validateCommand(textCommand({ to: ['13800138000', '+14155552671'] }), policy, NOW));
    expect(result.request.body).toMatchObject({ to: ['+8613800138000', '+14155552671'] });
  });

  it('removes duplicates after normalisation (13800138000 and +8613800138000 are one recipient)', () => {
    const result = sent(validateCommand(textCommand({ to: ['13800138000', '+8613800138000', '13800138000', '18509872103'] }), policy, NOW));
    expect(result.request.body).toMatchObject({ to: ['+8613800138000', '+8618509872103'] });
    expect(result.duplicatesRemoved).toBe(2);
  });

  it('requires at least one', () => {
    expect(problemsOf(textCommand({ to: [] }))).toEqual([{ field: 'operation.to', problem: 'at least one recipient is required' }]);
  });

  it.each([
    ['', 'recipient is empty'],
    ['138 0013 8000', "recipient must be ASCII digits with an optional leading '+' (no spaces, punctuation or other characters)"],
    ['１３８００１３８０００', "recipient must be ASCII digits with an optional leading '+' (no spaces, punctuation or other characters)"],
    ['12345', 'recipient is too short to be a phone number'],
    ['1380013800', 'recipient is not a valid phone number (no number range of its region matches)'],
    ['+99912345678', 'recipient starts with a calling code that does not exist'],
  ])('rejects malformed %j with its index', (bad, words) => {
    expect(problemsOf(textCommand({ to: ['13800138000', bad] }))).toEqual([
      {
        field: 'operation.to[1]',
        problem: `${words}; expected E.164 ('+' and calling code, e.g. +8613800138000) or a national number of CN`,
      },
    ]);
  });

  it('allows exactly maxRecipients entries and rejects one more, counting duplicates as given', () => {
    const small: ValidationPolicy = { ...policy, maxRecipients: 2 };
    expect(validateCommand(textCommand({ to: ['13800138000', '+8613800138000'] }), small, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ to: ['13800138000', '+8613800138000', '13800138000'] }), small)).toEqual([
      { field: 'operation.to', problem: RULES.recipientsTooMany.message(3, 2) },
    ]);
  });

  it('enforces the default of 1000', () => {
    const to = Array.from({ length: 1001 }, (_, i) => `+86138${String(i).padStart(8, '0')}`);
    expect(problemsOf(textCommand({ to }))).toEqual([
      {
        field: 'operation.to',
        problem:
          'at most 1000 recipients are allowed; got 1001 (counted as given, before removing duplicates and invalid numbers; only the first 1000 were examined)',
      },
    ]);
    expect(validateCommand(textCommand({ to: to.slice(0, 1000) }), policy, NOW).kind).toBe('send');
  });

  it('gives 50,000 invalid recipients one count problem and examines only the first maxRecipients (issue 11)', () => {
    const to = Array.from({ length: 50_000 }, () => 'not-a-number');
    const problems = problemsOf(textCommand({ to }));
    const listProblems = problems.filter((p) => p.field === 'operation.to');
    expect(listProblems).toEqual([{ field: 'operation.to', problem: expect.stringMatching(/^at most 1000 recipients are allowed; got 50000 /) as unknown }]);
    const entries = problems.filter((p) => p.field !== 'operation.to');
    expect(entries).toHaveLength(1000);
    expect(entries.at(-1)?.field).toBe('operation.to[999]');
  });

  it.each(['reject', 'send-valid'] as const)('rejects a recipient longer than 32 characters under %s, without echoing it', (partialRecipients) => {
    const long = '1'.repeat(33);
    const result = validateCommand(textCommand({ to: ['13800138000', long] }), { ...policy, partialRecipients }, NOW);
    expect(result).toEqual({
      kind: 'rejected',
      problems: [
        {
          field: 'operation.to[1]',
          problem:
            'recipient must be at most 32 characters (Unicode code points); got 33 (this rejects the whole command under every PARTIAL_RECIPIENTS policy)',
        },
      ],
    });
    expect(validateCommand(textCommand({ to: ['13800138000', '1'.repeat(32)] }), sendValid, NOW).kind).toBe('send');
  });
});

describe('partial-recipients policy', () => {
  const to = ['13800138000', 'bogus', '18509872103', '12345'];

  it('reject: one invalid recipient rejects the whole command', () => {
    expect(problemsOf(textCommand({ to })).map((p) => p.field)).toEqual(['operation.to[1]', 'operation.to[3]']);
  });

  it('send-valid: sends to the valid ones and reports the others as given', () => {
    const result = sent(validateCommand(textCommand({ to }), sendValid, NOW));
    expect(result.request.body).toMatchObject({ to: ['+8613800138000', '+8618509872103'] });
    expect(result.rejectedRecipients).toEqual([
      { to: 'bogus', problem: expect.stringMatching(/^recipient must be ASCII digits/) },
      { to: '12345', problem: expect.stringMatching(/^recipient is too short/) },
    ]);
  });

  it('send-valid: rejects when none is valid', () => {
    expect(problemsOf(textCommand({ to: ['bogus', '12345'] }), sendValid)).toEqual([
      { field: 'operation.to[0]', problem: expect.stringMatching(/^recipient must be ASCII digits/) },
      { field: 'operation.to[1]', problem: expect.stringMatching(/^recipient is too short/) },
      { field: 'operation.to', problem: 'no valid recipient to send to: all 2 were rejected' },
    ]);
  });

  it('send-valid: other problems still reject, and list the bad recipients too', () => {
    expect(problemsOf(textCommand({ to, signature: 'x' }), sendValid).map((p) => p.field)).toEqual([
      'operation.to[1]',
      'operation.to[3]',
      'operation.signature',
    ]);
  });

  it('reject: a clean command has no rejected recipients', () => {
    expect(sent(validateCommand(textCommand(), policy, NOW)).rejectedRecipients).toEqual([]);
  });
});

describe('voice', () => {
  it.each([
    ['18509872103', '18509872103'],
    ['+8618509872103', '18509872103'],
  ])('accepts domestic %s and sends the national number %s', (to, national) => {
    const result = sent(validateCommand(voiceCommand({ to }), policy, NOW));
    expect(result.request).toEqual({ operation: 'sms.voice.verification.send', body: { to: national, code: '123456' } });
  });

  it.each([
    ['+14155552671', 'voice verification calls domestic numbers of CN only; got a number of US (+1)'],
    ['+442071838750', 'voice verification calls domestic numbers of CN only; got a number of GB (+44)'],
  ])('rejects international %s', (to, problem) => {
    expect(problemsOf(voiceCommand({ to }))).toEqual([{ field: 'operation.to', problem }]);
  });

  it('treats the home region as configured', () => {
    const us: ValidationPolicy = { ...policy, homeRegion: 'US' };
    expect(sent(validateCommand(voiceCommand({ to: '+14155552671' }), us, NOW)).request.body).toEqual({ to: '4155552671', code: '123456' });
    expect(problemsOf(voiceCommand({ to: '+8618509872103' }), us)).toEqual([
      { field: 'operation.to', problem: 'voice verification calls domestic numbers of US only; got a number of CN (+86)' },
    ]);
  });

  it.each([
    ['', 'callee is empty; expected a domestic number of CN, national or in E.164'],
    [
      '185 0987 2103',
      "callee must be ASCII digits with an optional leading '+' (no spaces, punctuation or other characters); expected a domestic number of CN, national or in E.164",
    ],
    ['12345', 'callee is too short to be a phone number; expected a domestic number of CN, national or in E.164'],
  ])('rejects malformed callee %j', (to, problem) => {
    expect(problemsOf(voiceCommand({ to }))).toEqual([{ field: 'operation.to', problem }]);
  });

  it.each([
    ['123', 'got 3 characters'],
    ['1234', null],
    ['12345', 'got 5 characters'],
    ['123456', null],
    ['1234567', 'got 7 characters'],
    ['', 'got 0 characters'],
    ['１２３４', 'got 4 characters, not all of them ASCII digits'], // full-width
    ['١٢٣٤', 'got 4 characters, not all of them ASCII digits'], // Arabic-Indic
    ['12a4', 'got 4 characters, not all of them ASCII digits'],
    ['12 456', 'got 6 characters, not all of them ASCII digits'],
  ])('code %j → %s', (code, tail) => {
    expect(problemsOf(voiceCommand({ code }))).toEqual(
      tail === null ? [] : [{ field: 'operation.code', problem: `code must be exactly 4 or 6 ASCII digits (0-9); ${tail}` }],
    );
  });
});

describe('every problem is reported at once', () => {
  it('text', () => {
    const command = textCommand(
      { to: ['13800138000', 'x', ''], signature: '合'.repeat(17), content: 'hi', templateId: 'T1', templateData: { a: 'b' } },
      { commandId: ' ' },
    );
    expect(problemsOf(command).map((p) => p.field)).toEqual(['commandId', 'operation.to[1]', 'operation.to[2]', 'operation.signature', 'operation']);
  });

  it('text without body and with stray templateData', () => {
    expect(problemsOf(textCommand({ content: '', templateData: { a: 'b' } })).map((p) => p.field)).toEqual(['operation', 'operation.templateData']);
  });

  it('voice', () => {
    expect(problemsOf(voiceCommand({ to: '+14155552671', code: '12' }, { commandId: '' })).map((p) => p.field)).toEqual([
      'commandId',
      'operation.to',
      'operation.code',
    ]);
  });
});

describe('limits (issue 11)', () => {
  const small: ValidationPolicy = {
    ...policy,
    maxContentChars: 10,
    maxContentSegments: 1,
    maxTemplateIdChars: 4,
    maxTemplateVariables: 2,
    maxTemplateKeyChars: 3,
    maxTemplateValueChars: 5,
    maxMetadataEntries: 2,
    maxMetadataBytes: 8,
  };
  const template = (templateData: Record<string, string>, templateId = 'T1') => textCommand({ content: undefined, templateId, templateData });

  it('commandId: at most 256 code points (a 4-byte emoji counts as one)', () => {
    expect(validateCommand(textCommand({}, { commandId: '😀'.repeat(256) }), policy, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({}, { commandId: 'c'.repeat(257) }))).toEqual([
      { field: 'commandId', problem: 'commandId must be at most 256 characters (Unicode code points); got 257' },
    ]);
  });

  it('content: at most maxContentChars code points, counted as code points', () => {
    expect(validateCommand(textCommand({ content: '😀'.repeat(10) }), { ...small, maxContentSegments: 8 }, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ content: 'a'.repeat(11) }), small)).toEqual([
      { field: 'operation.content', problem: 'content must be at most 10 characters (Unicode code points); got 11' },
    ]);
  });

  it('content: the default 500 characters fit in the default 8 segments domestically, 501 do not pass', () => {
    expect(validateCommand(textCommand({ content: '您'.repeat(500), signature: '合'.repeat(16) }), policy, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ content: '您'.repeat(501) }))).toEqual([
      { field: 'operation.content', problem: 'content must be at most 500 characters (Unicode code points); got 501' },
    ]);
  });

  it('content: billed segments count the signature, UCS-2 for home-region recipients (【sig】, 70 then 67 per part)', () => {
    const twoParts: ValidationPolicy = { ...policy, maxContentSegments: 1 };
    // 【合一短信】 is 6 units: 64 + 6 = 70 fits one message, 65 + 6 = 71 needs two.
    expect(validateCommand(textCommand({ content: 'a'.repeat(64) }), twoParts, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ content: 'a'.repeat(65) }), twoParts)).toEqual([
      { field: 'operation.content', problem: 'content would be billed as 2 messages per recipient (signature included, UCS-2); at most 1 are allowed' },
    ]);
  });

  it('content: an international recipient is billed GSM-7 ([sig] , 160 septets) when the text allows', () => {
    const one: ValidationPolicy = { ...policy, maxContentSegments: 1 };
    // "[Acme] " is 9 septets ('[' and ']' are extension characters, 2 each): 151 + 9 = 160 fits one
    // message for a US recipient; for a CN one 【Acme】 + 151 is 157 UCS-2 units, 3 parts.
    const content = 'a'.repeat(151);
    expect(validateCommand(textCommand({ to: ['+14155552671'], signature: 'Acme', content }), one, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ to: ['+14155552671', '13800138000'], signature: 'Acme', content }), one)).toEqual([
      { field: 'operation.content', problem: 'content would be billed as 3 messages per recipient (signature included, UCS-2); at most 1 are allowed' },
    ]);
    expect(problemsOf(textCommand({ to: ['+14155552671'], signature: 'Acme', content: `${content}a` }), one)).toEqual([
      { field: 'operation.content', problem: 'content would be billed as 2 messages per recipient (signature included, GSM-7); at most 1 are allowed' },
    ]);
  });

  it('content: surrogate pairs count two UTF-16 units toward segments', () => {
    // 500 emoji are 500 code points (within the character limit) but 1000 units: 16 UCS-2 parts.
    expect(problemsOf(textCommand({ content: '😀'.repeat(500) }))).toEqual([
      { field: 'operation.content', problem: 'content would be billed as 16 messages per recipient (signature included, UCS-2); at most 8 are allowed' },
    ]);
  });

  it('templateId: at most maxTemplateIdChars code points', () => {
    expect(validateCommand(template({}, 'T123'), small, NOW).kind).toBe('send');
    expect(problemsOf(template({}, 'T1234'), small)).toEqual([
      { field: 'operation.templateId', problem: 'templateId must be at most 4 characters (Unicode code points); got 5' },
    ]);
  });

  it('templateData: at most maxTemplateVariables entries, and then no per-entry problems', () => {
    expect(validateCommand(template({ a: '1', b: '2' }), small, NOW).kind).toBe('send');
    expect(problemsOf(template({ a: '1', b: '2', ccccccc: '3'.repeat(100) }), small)).toEqual([
      { field: 'operation.templateData', problem: 'at most 2 template variables are allowed; got 3' },
    ]);
  });

  it('templateData: one problem for all over-long names and one for all over-long values, never quoting them', () => {
    const problems = problemsOf(template({ abcd: '123456', 'ab😀': '12345', abcdefg: '1' }), { ...small, maxTemplateVariables: 3 });
    expect(problems).toEqual([
      {
        field: 'operation.templateData',
        problem: 'template variable names must be at most 3 characters (Unicode code points); 2 are longer, the longest has 7',
      },
      {
        field: 'operation.templateData',
        problem: 'template variable values must be at most 5 characters (Unicode code points); 1 is longer, the longest has 6',
      },
    ]);
    expect(JSON.stringify(problems)).not.toMatch(/abcd|123456/);
  });

  it('metadata: at most maxMetadataEntries entries, then at most maxMetadataBytes UTF-8 bytes', () => {
    expect(validateCommand(voiceCommand({}, { metadata: { a: '1234567' } }), small, NOW).kind).toBe('send');
    expect(problemsOf(textCommand({ content: 'hi' }, { metadata: { a: '1', b: '2', c: '3' } }), small)).toEqual([
      { field: 'metadata', problem: 'at most 2 metadata entries are allowed; got 3' },
    ]);
    // '合' is 3 bytes in UTF-8: 1 + 9 = 10 bytes.
    expect(problemsOf(textCommand({ content: 'hi' }, { metadata: { a: '合合合' } }), small)).toEqual([
      { field: 'metadata', problem: 'metadata must be at most 8 bytes (UTF-8, keys and values together); got 10' },
    ]);
  });

  it('checks metadata on voice commands too', () => {
    expect(problemsOf(voiceCommand({}, { metadata: { a: '1', b: '2', c: '3' } }), small)).toEqual([
      { field: 'metadata', problem: 'at most 2 metadata entries are allowed; got 3' },
    ]);
  });
});

describe('the footprint of a send (what a refusal can be about: route and expected cost)', () => {
  it('lists the recipients’ regions, sorted and distinct, and counts billed messages per recipient kind', () => {
    // Domestic: 【sig】 + text, UCS-2, 1 part each; international: [sig] + text, GSM-7, 1 part each.
    const result = sent(
      validateCommand(textCommand({ to: ['+61412345678', '13800138000', '+442071838750', '+61412345679'], signature: 'Acme', content: 'hello' }), policy, NOW),
    );
    expect(result.footprint).toEqual({ operation: 'sms.message.send', regions: ['AU', 'CN', 'GB'], costUnits: 4 });
  });

  it('counts a long text by its billed parts', () => {
    const content = 'x'.repeat(200); // GSM-7: 2 parts abroad; UCS-2 at home (206 characters with 【Acme】): 4 parts
    const result = sent(validateCommand(textCommand({ to: ['13800138000', '13800138001', '+61412345678'], signature: 'Acme', content }), policy, NOW));
    expect(result.footprint).toEqual({ operation: 'sms.message.send', regions: ['AU', 'CN'], costUnits: 4 + 4 + 2 });
  });

  it('counts a template as one per recipient, and leaves rejected recipients out under send-valid', () => {
    const result = sent(validateCommand(textCommand({ to: ['13800138000', 'nope', '+61412345678'], content: undefined, templateId: 'otp' }), sendValid, NOW));
    expect(result.footprint).toEqual({ operation: 'sms.message.send', regions: ['AU', 'CN'], costUnits: 2 });
  });

  it('a voice call is one unit to the home region', () => {
    expect(sent(validateCommand(voiceCommand(), policy, NOW)).footprint).toEqual({ operation: 'sms.voice.verification.send', regions: ['CN'], costUnits: 1 });
  });
});
