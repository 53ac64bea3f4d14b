import { geoRuleRefusing, geoUnrestricted, NON_GEOGRAPHIC_REGION, type GeoRefusal, type GeoRule } from './geo.ts';
import { FIXED_LIMITS, overLimit } from './limits.ts';
import { isDomestic, parsePhone } from './phone.ts';
import { RULES, type FieldProblem } from './rules.ts';
import type { ValidationPolicy } from './policy.ts';

export { NON_GEOGRAPHIC_REGION } from './geo.ts';

/** Which kinds of valid recipient a list holds: billing differs between them. */
export interface RecipientRegions {
  readonly domestic: boolean;
  readonly international: boolean;
}

/** One valid recipient as the velocity limits see it (src/worker/guard/velocity.ts): where it is, never who. */
export interface Destination {
  /** `operation.to[i]` (text) or `operation.to` (voice): the recipient's place in the command. */
  readonly field: string;
  /** As given in the command (for `rejectedRecipients`). */
  readonly given: string;
  /** ISO 3166 alpha-2 of the parsed number, or `001` (non-geographic). */
  readonly region: string;
  /** Calling code, digits only, e.g. `86`. */
  readonly callingCode: string;
  /** National significant number (digits). */
  readonly national: string;
}

export interface Recipients {
  /** Distinct valid recipients in E.164, in first-seen order. */
  readonly to: readonly string[];
  /** The same recipients as `to`, in the same order, with where each one is. */
  readonly destinations: readonly Destination[];
  /**
   * Invalid recipients, as given, with their field path; `refusedBy` marks a valid number whose
   * region the geo permissions refuse (under `enforce`), which is treated like an invalid one.
   */
  readonly invalid: readonly (FieldProblem & { readonly to: string; readonly refusedBy?: GeoRule })[];
  readonly duplicatesRemoved: number;
  /** Problems with the list as a whole (empty, too many, none valid) and over-long entries: these reject under every policy. */
  readonly problems: readonly FieldProblem[];
  /** The "no valid recipient" problem (one of `problems`), when there is one. */
  readonly noneValid?: FieldProblem;
  /**
   * Recipients outside the geo permissions, in index order: refused (and in `invalid`) under
   * `enforce`, only reported (and sent) under `monitor`.
   */
  readonly geoRefusals: readonly GeoRefusal[];
  readonly regions: RecipientRegions;
  /**
   * The valid recipients' regions (ISO 3166 alpha-2; `001` for non-geographic numbers such as
   * +800), sorted and distinct: the command's route, as far as a refusal per destination goes.
   */
  readonly regionCodes: readonly string[];
  /** How many of the valid recipients are in the home region (billing differs). */
  readonly domesticCount: number;
}

export function validateRecipients(to: readonly string[], policy: ValidationPolicy): Recipients {
  const regions = { domestic: false, international: false };
  if (to.length === 0) {
    return {
      to: [],
      destinations: [],
      invalid: [],
      duplicatesRemoved: 0,
      problems: [{ field: 'operation.to', problem: RULES.recipientsEmpty.message() }],
      geoRefusals: [],
      regions,
      regionCodes: [],
      domesticCount: 0,
    };
  }
  const problems: FieldProblem[] = [];
  // Counted as given, and only the first maxRecipients entries are examined: a list of 50,000
  // bad numbers costs the same small work and gives the same small result as one of 1,001.
  if (to.length > policy.maxRecipients) {
    problems.push({ field: 'operation.to', problem: RULES.recipientsTooMany.message(to.length, policy.maxRecipients) });
  }
  const unique = new Set<string>();
  const destinations: Destination[] = [];
  const regionCodes = new Set<string>();
  let domesticCount = 0;
  const invalid: (FieldProblem & { to: string; refusedBy?: GeoRule })[] = [];
  const geoRefusals: GeoRefusal[] = [];
  const checkGeo = !geoUnrestricted(policy.geo);
  const enforceGeo = policy.geo.mode === 'enforce';
  let duplicatesRemoved = 0;
  const examined = Math.min(to.length, policy.maxRecipients);
  for (let index = 0; index < examined; index += 1) {
    const input = to[index] as string;
    const tooLong = overLimit(input, FIXED_LIMITS.recipientChars);
    if (tooLong !== undefined) {
      // Not an "invalid recipient": send-valid would echo it into rejectedRecipients.
      problems.push({ field: `operation.to[${index}]`, problem: RULES.recipientTooLong.message(tooLong, FIXED_LIMITS.recipientChars) });
      continue;
    }
    const parsed = parsePhone(input, policy.homeRegion);
    if (!parsed.ok) {
      invalid.push({ to: input, field: `operation.to[${index}]`, problem: RULES.recipientInvalid.message(parsed.problem, policy.homeRegion) });
    } else if (unique.has(parsed.phone.e164)) {
      duplicatesRemoved += 1;
    } else {
      const region = parsed.phone.region ?? NON_GEOGRAPHIC_REGION;
      const rule = checkGeo ? geoRuleRefusing(region, 'text', policy.geo) : undefined;
      if (rule !== undefined) {
        const field = `operation.to[${index}]`;
        geoRefusals.push({ field, operation: 'text', region, rule });
        if (enforceGeo) {
          // Like an invalid number: every occurrence is listed, and send-valid drops only this one.
          invalid.push({ to: input, field, problem: RULES.recipientRegionRefused.message(region, rule), refusedBy: rule });
          continue;
        }
      }
      unique.add(parsed.phone.e164);
      const { callingCode, national } = parsed.phone;
      destinations.push({ field: `operation.to[${index}]`, given: input, region, callingCode, national });
      regionCodes.add(region);
      if (isDomestic(parsed.phone, policy.homeRegion)) {
        regions.domestic = true;
        domesticCount += 1;
      } else regions.international = true;
    }
  }

  // Under `reject` the per-recipient problems already say it all.
  let noneValid: FieldProblem | undefined;
  if (unique.size === 0 && invalid.length > 0 && policy.partialRecipients === 'send-valid') {
    noneValid = { field: 'operation.to', problem: RULES.recipientsNoneValid.message(examined) };
    problems.push(noneValid);
  }
  return {
    to: [...unique],
    destinations,
    invalid,
    duplicatesRemoved,
    problems,
    ...(noneValid !== undefined && { noneValid }),
    geoRefusals,
    regions,
    regionCodes: [...regionCodes].sort(),
    domesticCount,
  };
}
