/**
 * Decides whether a command may cost money. Pure: no clock (the caller passes `nowMs`), no I/O.
 * Every problem is collected, not only the first, so a producer fixes a command in one round.
 */
import type { OperationName, ProviderRequest, TextMessageRequest } from '../provider/types.ts';
// One statement of how a text is segmented and billed, shared with the sandbox.
import { billedText, segment } from './segments.ts';
import type { SendCommand, TextOperation, VoiceOperation } from './command.ts';
import { geoRuleRefusing, geoUnrestricted, REGION_NOT_ALLOWED, type GeoRefusal } from './geo.ts';
import { codePoints, FIXED_LIMITS, mapBytes, overLimit } from './limits.ts';
import { isDomestic, parsePhone } from './phone.ts';
import type { ValidationPolicy } from './policy.ts';
import { validateRecipients, type Destination, type RecipientRegions } from './recipients.ts';
import { RULES } from './rules.ts';
import type { FieldProblem } from './rules.ts';

// The policy lives in policy.ts (recipients.ts reads it too); re-exported here, where callers look for it.
export { DEFAULT_VALIDATION_POLICY } from './policy.ts';
export type { ValidationPolicy } from './policy.ts';

export interface RejectedRecipient {
  /** As given in the command. */
  readonly to: string;
  readonly problem: string;
}

/**
 * What a refusal of this send can be about (see src/worker/send/refusal-scopes.ts): its route
 * (operation and destination regions) and its expected cost in billed units (recipients × billed
 * messages each; a template, whose text the service keeps, counts one per recipient).
 */
export interface SendFootprint {
  readonly operation: OperationName;
  /** ISO 3166 alpha-2 codes of the recipients, sorted and distinct (`001`: non-geographic). */
  readonly regions: readonly string[];
  readonly costUnits: number;
}

export type Validation =
  | {
      readonly kind: 'send';
      readonly request: ProviderRequest;
      readonly footprint: SendFootprint;
      readonly rejectedRecipients: readonly RejectedRecipient[];
      readonly duplicatesRemoved: number;
      /** The recipients sent to, with where each one is (for the velocity limits); text: in the order of the request's `to`. */
      readonly destinations: readonly Destination[];
      /**
       * Recipients outside the geo permissions (present only when there are some): dropped into
       * `rejectedRecipients` under `enforce` with `send-valid`, sent as usual under `monitor`.
       */
      readonly geoRefusals?: readonly GeoRefusal[];
    }
  | {
      readonly kind: 'rejected';
      readonly problems: readonly FieldProblem[];
      /** `REGION_NOT_ALLOWED` when the geo permissions are the only reason; otherwise absent (VALIDATION_FAILED). */
      readonly code?: typeof REGION_NOT_ALLOWED;
      /** Recipients outside the geo permissions (present only when there are some). */
      readonly geoRefusals?: readonly GeoRefusal[];
    }
  | { readonly kind: 'expired'; readonly expiresAt: number };

/** What validating one command found beyond its problems: the geo refusals, and which problems are theirs. */
interface GeoFindings {
  readonly refusals: GeoRefusal[];
  readonly problems: Set<FieldProblem>;
}

/** Empty and whitespace-only strings are not values (String.prototype.trim: Unicode White_Space, incl. U+3000). */
function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

const CODE_FORMAT = /^(?:[0-9]{4}|[0-9]{6})$/;
const ASCII_DIGITS = /^[0-9]*$/;

export function validateCommand(command: SendCommand, policy: ValidationPolicy, nowMs: number): Validation {
  // Expiry first: an expired command is EXPIRED even if it is also invalid.
  if (command.expiresAt !== null && command.expiresAt <= nowMs) {
    return { kind: 'expired', expiresAt: command.expiresAt };
  }
  const problems: FieldProblem[] = [];
  if (!present(command.commandId)) {
    problems.push({ field: 'commandId', problem: RULES.commandIdBlank.message() });
  } else {
    const length = overLimit(command.commandId, FIXED_LIMITS.commandIdChars);
    if (length !== undefined) problems.push({ field: 'commandId', problem: RULES.commandIdLength.message(length, FIXED_LIMITS.commandIdChars) });
  }
  validateMetadata(command.metadata, policy, problems);
  const operation = command.operation;
  const geo: GeoFindings = { refusals: [], problems: new Set() };
  const outcome = operation.kind === 'text' ? validateText(operation, policy, problems, geo) : validateVoice(operation, policy, problems, geo);
  const refusals = geo.refusals.length > 0 ? { geoRefusals: geo.refusals } : {};
  if (problems.length > 0 || outcome === undefined) {
    const onlyGeo = problems.length > 0 && problems.every((p) => geo.problems.has(p));
    return { kind: 'rejected', problems, ...(onlyGeo && { code: REGION_NOT_ALLOWED }), ...refusals };
  }
  return { kind: 'send', ...outcome, ...refusals };
}

type SendParts = Omit<Extract<Validation, { kind: 'send' }>, 'kind'>;

function validateMetadata(metadata: Readonly<Record<string, string>>, policy: ValidationPolicy, problems: FieldProblem[]): void {
  const entries = Object.keys(metadata).length;
  if (entries > policy.maxMetadataEntries) {
    problems.push({ field: 'metadata', problem: RULES.metadataTooMany.message(entries, policy.maxMetadataEntries) });
    return;
  }
  const bytes = mapBytes(metadata);
  if (bytes > policy.maxMetadataBytes) problems.push({ field: 'metadata', problem: RULES.metadataTooLarge.message(bytes, policy.maxMetadataBytes) });
}

function validateText(operation: TextOperation, policy: ValidationPolicy, problems: FieldProblem[], geo: GeoFindings): SendParts | undefined {
  const recipients = validateRecipients(operation.to, policy);
  geo.refusals.push(...recipients.geoRefusals);
  // "No valid recipient" is the geo permissions' doing when every recipient was refused by them.
  if (recipients.noneValid !== undefined && recipients.invalid.every((r) => r.refusedBy !== undefined)) geo.problems.add(recipients.noneValid);
  const others: FieldProblem[] = [...recipients.problems];

  // Spec §8: signature 2 to 16 characters.
  const signature = operation.signature;
  const signatureLength = codePoints(signature);
  const signatureOk = present(signature) && signatureLength >= 2 && signatureLength <= 16;
  if (!present(signature)) {
    others.push({ field: 'operation.signature', problem: RULES.signatureBlank.message() });
  } else if (!signatureOk) {
    others.push({ field: 'operation.signature', problem: RULES.signatureLength.message(signatureLength) });
  }

  const hasContent = present(operation.content);
  const hasTemplate = present(operation.templateId);
  if (hasContent && hasTemplate) others.push({ field: 'operation', problem: RULES.bodyBoth.message() });
  if (!hasContent && !hasTemplate) others.push({ field: 'operation', problem: RULES.bodyNeither.message() });
  if (hasContent) validateContent(operation.content, signatureOk ? signature : undefined, recipients.regions, policy, others);
  if (hasTemplate) {
    const length = overLimit(operation.templateId, policy.maxTemplateIdChars);
    if (length !== undefined) others.push({ field: 'operation.templateId', problem: RULES.templateIdLength.message(length, policy.maxTemplateIdChars) });
  }
  // An empty map is not a value either: generated producer code often defaults maps to {}.
  const templateData = operation.templateData !== undefined && Object.keys(operation.templateData).length > 0 ? operation.templateData : undefined;
  if (templateData !== undefined && !hasTemplate) {
    others.push({ field: 'operation.templateData', problem: RULES.templateDataWithoutTemplateId.message() });
  }
  if (templateData !== undefined) validateTemplateData(templateData, policy, others);

  // Invalid recipients are problems unless the policy lets the command go without them; once the
  // command is rejected anyway, they are reported too, so the producer sees everything at once.
  const rejectedAnyway = problems.length > 0 || others.length > 0;
  const invalidAreProblems = policy.partialRecipients === 'reject' || rejectedAnyway;
  if (invalidAreProblems) {
    for (const { field, problem, refusedBy } of recipients.invalid) {
      const entry = { field, problem };
      if (refusedBy !== undefined) geo.problems.add(entry);
      problems.push(entry);
    }
  }
  problems.push(...others);

  if (problems.length > 0) return undefined;
  const body: TextMessageRequest = {
    to: recipients.to,
    signature,
    ...(hasContent ? { content: operation.content } : {}),
    ...(hasTemplate ? { templateId: operation.templateId } : {}),
    ...(hasTemplate && templateData !== undefined ? { templateData } : {}),
  };
  const valid = recipients.to.length;
  const perRecipient = (domestic: boolean): number => (hasContent ? segment(billedText(signature, operation.content, domestic)).parts : 1);
  const costUnits = recipients.domesticCount * perRecipient(true) + (valid - recipients.domesticCount) * perRecipient(false);
  return {
    request: { operation: 'sms.message.send', body },
    footprint: { operation: 'sms.message.send', regions: recipients.regionCodes, costUnits },
    rejectedRecipients: recipients.invalid.map(({ to, problem }) => ({ to, problem })),
    duplicatesRemoved: recipients.duplicatesRemoved,
    destinations: recipients.destinations,
  };
}

/**
 * Content length in code points, then, when that is within the limit and the signature is valid,
 * the billed segments of the text as each kind of recipient receives it (home region: `【sig】`,
 * always UCS-2; elsewhere: `[sig] `, GSM-7 when every character allows). With no valid recipient
 * (the command is rejected anyway) both kinds are counted.
 */
function validateContent(content: string, signature: string | undefined, regions: RecipientRegions, policy: ValidationPolicy, problems: FieldProblem[]): void {
  const length = overLimit(content, policy.maxContentChars);
  if (length !== undefined) {
    problems.push({ field: 'operation.content', problem: RULES.contentLength.message(length, policy.maxContentChars) });
    return;
  }
  if (signature === undefined) return;
  const none = !regions.domestic && !regions.international;
  const kinds = [...(regions.domestic || none ? [true] : []), ...(regions.international || none ? [false] : [])];
  const worst = kinds.map((domestic) => segment(billedText(signature, content, domestic))).reduce((a, b) => (b.parts > a.parts ? b : a));
  if (worst.parts > policy.maxContentSegments) {
    problems.push({ field: 'operation.content', problem: RULES.contentSegments.message(worst.parts, policy.maxContentSegments, worst.encoding) });
  }
}

/** One problem per kind (count, names, values), never one per entry: the map may be large. */
function validateTemplateData(templateData: Readonly<Record<string, string>>, policy: ValidationPolicy, problems: FieldProblem[]): void {
  const entries = Object.entries(templateData);
  if (entries.length > policy.maxTemplateVariables) {
    problems.push({ field: 'operation.templateData', problem: RULES.templateVariablesTooMany.message(entries.length, policy.maxTemplateVariables) });
    return;
  }
  const keys = { longer: 0, longest: 0 };
  const values = { longer: 0, longest: 0 };
  for (const [key, value] of entries) {
    const keyLength = overLimit(key, policy.maxTemplateKeyChars);
    if (keyLength !== undefined) {
      keys.longer += 1;
      keys.longest = Math.max(keys.longest, keyLength);
    }
    const valueLength = overLimit(value, policy.maxTemplateValueChars);
    if (valueLength !== undefined) {
      values.longer += 1;
      values.longest = Math.max(values.longest, valueLength);
    }
  }
  if (keys.longer > 0) {
    problems.push({ field: 'operation.templateData', problem: RULES.templateKeyLength.message(keys.longer, keys.longest, policy.maxTemplateKeyChars) });
  }
  if (values.longer > 0) {
    problems.push({ field: 'operation.templateData', problem: RULES.templateValueLength.message(values.longer, values.longest, policy.maxTemplateValueChars) });
  }
}

function validateVoice(operation: VoiceOperation, policy: ValidationPolicy, problems: FieldProblem[], geo: GeoFindings): SendParts | undefined {
  let national: string | undefined;
  let region: string | undefined;
  let callingCode = '';
  const parsed = parsePhone(operation.to, policy.homeRegion);
  if (!parsed.ok) {
    problems.push({ field: 'operation.to', problem: RULES.calleeInvalid.message(parsed.problem, policy.homeRegion) });
  } else if (!isDomestic(parsed.phone, policy.homeRegion)) {
    problems.push({
      field: 'operation.to',
      problem: RULES.calleeInternational.message(policy.homeRegion, parsed.phone.region, parsed.phone.callingCode),
    });
  } else {
    // The service's example sends the national number; international forms are not supported.
    national = parsed.phone.national;
    region = parsed.phone.region ?? policy.homeRegion;
    callingCode = parsed.phone.callingCode;
    const rule = geoUnrestricted(policy.geo) ? undefined : geoRuleRefusing(region, 'voice', policy.geo);
    if (rule !== undefined) {
      geo.refusals.push({ field: 'operation.to', operation: 'voice', region, rule });
      if (policy.geo.mode === 'enforce') {
        const problem = { field: 'operation.to', problem: RULES.calleeRegionRefused.message(region, rule) };
        geo.problems.add(problem);
        problems.push(problem);
      }
    }
  }

  const code = operation.code;
  if (!CODE_FORMAT.test(code)) {
    problems.push({ field: 'operation.code', problem: RULES.codeFormat.message(codePoints(code), ASCII_DIGITS.test(code)) });
  }

  if (national === undefined || region === undefined || problems.length > 0) return undefined;
  return {
    request: { operation: 'sms.voice.verification.send', body: { to: national, code } },
    footprint: { operation: 'sms.voice.verification.send', regions: [region], costUnits: 1 },
    rejectedRecipients: [],
    duplicatesRemoved: 0,
    destinations: [{ field: 'operation.to', given: operation.to, region, callingCode, national }],
  };
}
