/**
 * Validation of the two operations' bodies as the spec states them (§4, §8), returning either a
 * normalized command or the key of the sandbox error to answer. Hand-written rather than a schema
 * library: this runs on every request of a benchmark and must stay cheap.
 */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { CountryCode } from 'libphonenumber-js';
import type { SandboxErrorKey } from './error-codes.ts';
import { renderTemplate } from './templates.ts';

export const MAX_TEXT_RECIPIENTS = 1000;

export interface Recipient {
  /** E.164. */
  readonly e164: string;
  readonly regionCode: string;
  /** Calling code, digits only. */
  readonly countryCode: string;
}

export interface TextCommand {
  readonly recipients: readonly Recipient[];
  readonly signature: string;
  /** `content`, or the template rendered with templateData. */
  readonly text: string;
}

export interface VoiceCommand {
  readonly recipient: Recipient;
  readonly code: string;
}

export type Validated<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: SandboxErrorKey };

function fail(error: SandboxErrorKey): { ok: false; error: SandboxErrorKey } {
  return { ok: false, error };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function parseRecipient(number: string, homeRegion: CountryCode): Recipient | undefined {
  const parsed = parsePhoneNumberFromString(number, homeRegion);
  if (parsed === undefined || !parsed.isValid() || parsed.country === undefined) return undefined;
  return { e164: parsed.number, regionCode: parsed.country, countryCode: parsed.countryCallingCode };
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

export function validateText(body: unknown, homeRegion: CountryCode): Validated<TextCommand> {
  if (!isRecord(body)) return fail('invalidBody');
  const { to, signature, content, templateId, templateData } = body;

  const numbers = typeof to === 'string' ? [to] : to;
  if (!Array.isArray(numbers) || numbers.length === 0) return fail('missingRecipient');
  if (numbers.length > MAX_TEXT_RECIPIENTS) return fail('tooManyRecipients');
  if (!numbers.every((n): n is string => typeof n === 'string' && n !== '')) return fail('missingRecipient');

  if (typeof signature !== 'string') return fail('invalidMessageSignature');
  const signatureLength = codePoints(signature);
  if (signatureLength < 2 || signatureLength > 16) return fail('invalidMessageSignature');

  if ((content === undefined) === (templateId === undefined)) return fail('contentTemplateConflict');
  let text: string;
  if (content !== undefined) {
    if (templateData !== undefined) return fail('templateDataWithoutTemplate');
    if (typeof content !== 'string' || content === '') return fail('invalidContent');
    text = content;
  } else {
    if (typeof templateId !== 'string' || templateId === '') return fail('unknownTemplate');
    const data = templateData ?? {};
    if (!isRecord(data) || !Object.values(data).every((v) => typeof v === 'string')) return fail('invalidTemplateData');
    const rendered = renderTemplate(templateId, data as Record<string, string>);
    if (!rendered.ok) return fail(rendered.reason === 'unknown-template' ? 'unknownTemplate' : 'invalidTemplateData');
    text = rendered.text;
  }

  const recipients: Recipient[] = [];
  for (const number of numbers) {
    const recipient = parseRecipient(number, homeRegion);
    if (recipient === undefined) return fail('invalidPhoneNumber');
    recipients.push(recipient);
  }
  return { ok: true, value: { recipients, signature, text } };
}

const VOICE_CODE = /^(?:[0-9]{4}|[0-9]{6})$/;

export function validateVoice(body: unknown, homeRegion: CountryCode): Validated<VoiceCommand> {
  if (!isRecord(body)) return fail('invalidBody');
  const { to, code } = body;
  if (Array.isArray(to)) return fail('tooManyRecipients');
  if (typeof to !== 'string' || to === '') return fail('missingRecipient');
  if (typeof code !== 'string' || !VOICE_CODE.test(code)) return fail('invalidVerificationCode');
  const recipient = parseRecipient(to, homeRegion);
  if (recipient === undefined) return fail('invalidPhoneNumber');
  return { ok: true, value: { recipient, code } };
}
