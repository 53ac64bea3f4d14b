/**
 * Every validation rule and the exact words of its problem, in one table, so docs/contracts.md can list
 * them all and producers' developers see the same text in `error.details[].problem`. Messages
 * never repeat the offending value (numbers and codes are personal or secret; the field path
 * says which one), only counts and limits.
 */
import { NON_GEOGRAPHIC_REGION, REGION_NOT_ALLOWED, type GeoRule } from './geo.ts';
import type { CountryCode, PhoneProblem } from './phone.ts';

/** One problem found in a command, with the path of the offending field (e.g. `operation.to[2]`). */
export interface FieldProblem {
  readonly field: string;
  readonly problem: string;
}

const PHONE_PROBLEM_WORDS = {
  empty: 'is empty',
  syntax: "must be ASCII digits with an optional leading '+' (no spaces, punctuation or other characters)",
  'too-short': 'is too short to be a phone number',
  'too-long': 'is too long to be a phone number',
  'invalid-length': 'does not have a valid length for its region',
  'unknown-calling-code': 'starts with a calling code that does not exist',
  invalid: 'is not a valid phone number (no number range of its region matches)',
} as const satisfies Record<PhoneProblem, string>;

/** `region US is not in GEO_TEXT_ALLOWED_REGIONS` / `region NG is in GEO_DENIED_REGIONS`, with the result code. */
function regionRefusal(region: string, rule: GeoRule): string {
  const name = region === NON_GEOGRAPHIC_REGION ? `${region} (non-geographic)` : region;
  return `region ${name} is ${rule.includes('_DENIED_') ? 'in' : 'not in'} ${rule} (${REGION_NOT_ALLOWED})`;
}

/**
 * `field` is the path as docs/contracts.md shows it (`[i]` stands for the index); `message` builds the
 * problem text. Keys are stable rule ids, used by tests.
 */
export const RULES = {
  commandIdBlank: {
    field: 'commandId',
    message: () => 'commandId must not be empty or whitespace only',
  },
  commandIdLength: {
    field: 'commandId',
    message: (length: number, max: number) => `commandId must be at most ${max} characters (Unicode code points); got ${length}`,
  },
  recipientsEmpty: {
    field: 'operation.to',
    message: () => 'at least one recipient is required',
  },
  recipientInvalid: {
    field: 'operation.to[i]',
    message: (problem: PhoneProblem, homeRegion: CountryCode) =>
      `recipient ${PHONE_PROBLEM_WORDS[problem]}; expected E.164 ('+' and calling code, e.g. +8613800138000) or a national number of ${homeRegion}`,
  },
  recipientsTooMany: {
    field: 'operation.to',
    message: (count: number, max: number) =>
      `at most ${max} recipients are allowed; got ${count} (counted as given, before removing duplicates and invalid numbers; only the first ${max} were examined)`,
  },
  recipientTooLong: {
    field: 'operation.to[i]',
    message: (length: number, max: number) =>
      `recipient must be at most ${max} characters (Unicode code points); got ${length} (this rejects the whole command under every PARTIAL_RECIPIENTS policy)`,
  },
  recipientRegionRefused: {
    field: 'operation.to[i]',
    message: (region: string, rule: GeoRule) => `recipient's ${regionRefusal(region, rule)}`,
  },
  recipientsNoneValid: {
    field: 'operation.to',
    message: (count: number) => `no valid recipient to send to: all ${count} were rejected`,
  },
  signatureBlank: {
    field: 'operation.signature',
    message: () => 'signature must not be empty or whitespace only',
  },
  signatureLength: {
    field: 'operation.signature',
    message: (length: number) => `signature must be 2 to 16 characters (Unicode code points); got ${length}`,
  },
  bodyBoth: {
    field: 'operation',
    message: () => 'exactly one of content and templateId must be given; got both',
  },
  bodyNeither: {
    field: 'operation',
    message: () => 'exactly one of content and templateId must be given; got neither (empty or whitespace-only strings count as absent)',
  },
  contentLength: {
    field: 'operation.content',
    message: (length: number, max: number) => `content must be at most ${max} characters (Unicode code points); got ${length}`,
  },
  contentSegments: {
    field: 'operation.content',
    message: (parts: number, max: number, encoding: string) =>
      `content would be billed as ${parts} messages per recipient (signature included, ${encoding}); at most ${max} are allowed`,
  },
  templateIdLength: {
    field: 'operation.templateId',
    message: (length: number, max: number) => `templateId must be at most ${max} characters (Unicode code points); got ${length}`,
  },
  templateVariablesTooMany: {
    field: 'operation.templateData',
    message: (count: number, max: number) => `at most ${max} template variables are allowed; got ${count}`,
  },
  templateKeyLength: {
    field: 'operation.templateData',
    message: (longer: number, longest: number, max: number) =>
      `template variable names must be at most ${max} characters (Unicode code points); ${longer} ${longer === 1 ? 'is' : 'are'} longer, the longest has ${longest}`,
  },
  templateValueLength: {
    field: 'operation.templateData',
    message: (longer: number, longest: number, max: number) =>
      `template variable values must be at most ${max} characters (Unicode code points); ${longer} ${longer === 1 ? 'is' : 'are'} longer, the longest has ${longest}`,
  },
  templateDataWithoutTemplateId: {
    field: 'operation.templateData',
    message: () => 'templateData is only allowed together with templateId',
  },
  calleeInvalid: {
    field: 'operation.to',
    message: (problem: PhoneProblem, homeRegion: CountryCode) =>
      `callee ${PHONE_PROBLEM_WORDS[problem]}; expected a domestic number of ${homeRegion}, national or in E.164`,
  },
  calleeInternational: {
    field: 'operation.to',
    message: (homeRegion: CountryCode, region: string | undefined, callingCode: string) =>
      `voice verification calls domestic numbers of ${homeRegion} only; got a number of ${region ?? 'no region'} (+${callingCode})`,
  },
  calleeRegionRefused: {
    field: 'operation.to',
    message: (region: string, rule: GeoRule) => `callee's ${regionRefusal(region, rule)}`,
  },
  codeFormat: {
    field: 'operation.code',
    message: (length: number, allAsciiDigits: boolean) =>
      `code must be exactly 4 or 6 ASCII digits (0-9); got ${length} character${length === 1 ? '' : 's'}${allAsciiDigits ? '' : ', not all of them ASCII digits'}`,
  },
  metadataTooMany: {
    field: 'metadata',
    message: (count: number, max: number) => `at most ${max} metadata entries are allowed; got ${count}`,
  },
  metadataTooLarge: {
    field: 'metadata',
    message: (bytes: number, max: number) => `metadata must be at most ${max} bytes (UTF-8, keys and values together); got ${bytes}`,
  },
} as const;

export type RuleId = keyof typeof RULES;
