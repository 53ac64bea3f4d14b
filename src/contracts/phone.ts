/**
 * Phone number parsing and normalisation. Validity is decided by libphonenumber-js with its `max`
 * metadata, which checks a number against the real number ranges of its region (the default `min`
 * metadata only checks lengths, so it would let through numbers no one can be charged for).
 *
 * The one thing checked here before libphonenumber is the character set: libphonenumber is built
 * to find a number in free text, so it accepts spaces, punctuation, letters around the number and
 * even full-width or Arabic-Indic digits. A machine-to-machine contract should not guess, so an
 * input must be ASCII digits with an optional leading '+'. Everything else (what the digits mean,
 * which forms a caller of the home region may dial, e.g. a leading trunk '0' or the '00'
 * international prefix) is left to libphonenumber, interpreting the number as dialled in the
 * home region.
 */
import { parsePhoneNumberFromString, validatePhoneNumberLength } from 'libphonenumber-js/max';
import type { CountryCode } from 'libphonenumber-js/max';

export type { CountryCode };

/** Why a number was refused; turned into words by RULES in rules.ts. */
export type PhoneProblem = 'empty' | 'syntax' | 'too-short' | 'too-long' | 'invalid-length' | 'unknown-calling-code' | 'invalid';

export interface Phone {
  /** E.164, e.g. `+8613800138000`: what the text message request carries. */
  readonly e164: string;
  /** National significant number, e.g. `13800138000`: what the voice request carries. */
  readonly national: string;
  /** Region the number belongs to; undefined for non-geographic numbers (e.g. +800). */
  readonly region: CountryCode | undefined;
  /** Calling code, digits only, e.g. `86`. */
  readonly callingCode: string;
}

export type PhoneParse = { readonly ok: true; readonly phone: Phone } | { readonly ok: false; readonly problem: PhoneProblem };

/** ASCII digits with an optional leading '+': a character-set check only, not a validity check. */
const PHONE_CHARACTERS = /^\+?[0-9]+$/;

const LENGTH_PROBLEMS = {
  TOO_SHORT: 'too-short',
  TOO_LONG: 'too-long',
  INVALID_LENGTH: 'invalid-length',
  INVALID_COUNTRY: 'unknown-calling-code',
  NOT_A_NUMBER: 'invalid',
} as const satisfies Record<string, PhoneProblem>;

/**
 * Parses a recipient given either in E.164 (`+` and calling code) or as a number dialled in
 * `homeRegion`. Pure; never throws.
 */
export function parsePhone(input: string, homeRegion: CountryCode): PhoneParse {
  if (input.trim() === '') return { ok: false, problem: 'empty' };
  if (!PHONE_CHARACTERS.test(input)) return { ok: false, problem: 'syntax' };

  const parsed = parsePhoneNumberFromString(input, homeRegion);
  if (parsed !== undefined && parsed.isValid()) {
    return {
      ok: true,
      phone: {
        e164: parsed.number,
        national: parsed.nationalNumber,
        region: parsed.country,
        callingCode: parsed.countryCallingCode,
      },
    };
  }
  const lengthProblem = validatePhoneNumberLength(input, homeRegion);
  return { ok: false, problem: lengthProblem === undefined ? 'invalid' : LENGTH_PROBLEMS[lengthProblem] };
}

/** A domestic number belongs to the home region itself (not merely to its calling code: +1 is shared by US and CA). */
export function isDomestic(phone: Phone, homeRegion: CountryCode): boolean {
  return phone.region === homeRegion;
}
