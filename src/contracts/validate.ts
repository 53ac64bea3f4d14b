/**
 * Decides whether a command may cost money. Pure: no clock (the caller passes `nowMs`), no I/O.
 * Every problem is collected, not only the first, so a producer fixes a command in one round.
 */
import type { ProviderRequest, TextMessageRequest } from '../provider/types.ts';
import type { SendCommand, TextOperation, VoiceOperation } from './command.ts';
import { isDomestic, parsePhone } from './phone.ts';
import type { CountryCode } from './phone.ts';
import { RULES } from './rules.ts';
import type { FieldProblem } from './rules.ts';

export interface ValidationPolicy {
  /** Region whose national numbers are accepted without '+', and the only region voice calls go to. @defaultValue 'CN' */
  readonly homeRegion: CountryCode;
  /**
   * Most distinct recipients of one text message. Our limit: the service publishes none, and one
   * command should not be able to spend without bound. @defaultValue 1000
   */
  readonly maxRecipients: number;
  /**
   * `reject`: any invalid recipient rejects the whole command. `send-valid`: send to the valid
   * recipients and list the invalid ones in the result's `rejectedRecipients`. @defaultValue 'reject'
   */
  readonly partialRecipients: 'reject' | 'send-valid';
}

export const DEFAULT_VALIDATION_POLICY = {
  homeRegion: 'CN',
  maxRecipients: 1000,
  partialRecipients: 'reject',
} as const satisfies ValidationPolicy;

export interface RejectedRecipient {
  /** As given in the command. */
  readonly to: string;
  readonly problem: string;
}

export type Validation =
  | {
      readonly kind: 'send';
      readonly request: ProviderRequest;
      readonly rejectedRecipients: readonly RejectedRecipient[];
      readonly duplicatesRemoved: number;
    }
  | { readonly kind: 'rejected'; readonly problems: readonly FieldProblem[] }
  | { readonly kind: 'expired'; readonly expiresAt: number };

/** Empty and whitespace-only strings are not values (String.prototype.trim: Unicode White_Space, incl. U+3000). */
function present(value: string | undefined): value is string {
  return value !== undefined && value.trim() !== '';
}

/** Code points, not UTF-16 units: a Chinese signature of 16 characters is 16, an emoji is 1. */
function codePoints(value: string): number {
  return [...value].length;
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
  }
  const operation = command.operation;
  const outcome =
    operation.kind === 'text' ? validateText(operation, policy, problems) : validateVoice(operation, policy, problems);
  if (problems.length > 0 || outcome === undefined) return { kind: 'rejected', problems };
  return { kind: 'send', ...outcome };
}

type SendParts = Omit<Extract<Validation, { kind: 'send' }>, 'kind'>;

function validateText(operation: TextOperation, policy: ValidationPolicy, problems: FieldProblem[]): SendParts | undefined {
  const recipients = validateRecipients(operation.to, policy);
  const others: FieldProblem[] = [...recipients.problems];

  const signature = operation.signature;
  if (!present(signature)) {
    others.push({ field: 'operation.signature', problem: RULES.signatureBlank.message() });
  } else if (codePoints(signature) < 2 || codePoints(signature) > 16) {
    others.push({ field: 'operation.signature', problem: RULES.signatureLength.message(codePoints(signature)) });
  }

  const hasContent = present(operation.content);
  const hasTemplate = present(operation.templateId);
  if (hasContent && hasTemplate) others.push({ field: 'operation', problem: RULES.bodyBoth.message() });
  if (!hasContent && !hasTemplate) others.push({ field: 'operation', problem: RULES.bodyNeither.message() });
  // An empty map is not a value either: generated producer code often defaults maps to {}.
  const templateData =
    operation.templateData !== undefined && Object.keys(operation.templateData).length > 0 ? operation.templateData : undefined;
  if (templateData !== undefined && !hasTemplate) {
    others.push({ field: 'operation.templateData', problem: RULES.templateDataWithoutTemplateId.message() });
  }

  // Invalid recipients are problems unless the policy lets the command go without them; once the
  // command is rejected anyway, they are reported too, so the producer sees everything at once.
  const rejectedAnyway = problems.length > 0 || others.length > 0;
  const invalidAreProblems = policy.partialRecipients === 'reject' || rejectedAnyway;
  if (invalidAreProblems) problems.push(...recipients.invalid.map(({ field, problem }) => ({ field, problem })));
  problems.push(...others);

  if (problems.length > 0) return undefined;
  const body: TextMessageRequest = {
    to: recipients.to,
    signature,
    ...(hasContent ? { content: operation.content } : {}),
    ...(hasTemplate ? { templateId: operation.templateId } : {}),
    ...(hasTemplate && templateData !== undefined ? { templateData } : {}),
  };
  return {
    request: { operation: 'sms.message.send', body },
    rejectedRecipients: recipients.invalid.map(({ to, problem }) => ({ to, problem })),
    duplicatesRemoved: recipients.duplicatesRemoved,
  };
}

interface Recipients {
  /** Distinct valid recipients in E.164, in first-seen order. */
  readonly to: readonly string[];
  /** Invalid recipients, as given, with their field path. */
  readonly invalid: readonly (FieldProblem & { readonly to: string })[];
  readonly duplicatesRemoved: number;
  /** Problems with the list as a whole (empty, too many, none valid). */
  readonly problems: readonly FieldProblem[];
}

function validateRecipients(to: readonly string[], policy: ValidationPolicy): Recipients {
  if (to.length === 0) {
    return { to: [], invalid: [], duplicatesRemoved: 0, problems: [{ field: 'operation.to', problem: RULES.recipientsEmpty.message() }] };
  }
  const unique = new Set<string>();
  const invalid: (FieldProblem & { to: string })[] = [];
  let duplicatesRemoved = 0;
  to.forEach((input, index) => {
    const parsed = parsePhone(input, policy.homeRegion);
    if (!parsed.ok) {
      invalid.push({ to: input, field: `operation.to[${index}]`, problem: RULES.recipientInvalid.message(parsed.problem, policy.homeRegion) });
    } else if (unique.has(parsed.phone.e164)) {
      duplicatesRemoved += 1;
    } else {
      unique.add(parsed.phone.e164);
    }
  });

  const problems: FieldProblem[] = [];
  // Under `reject` the per-recipient problems already say it all.
  if (unique.size === 0 && policy.partialRecipients === 'send-valid') {
    problems.push({ field: 'operation.to', problem: RULES.recipientsNoneValid.message(to.length) });
  }
  if (unique.size > policy.maxRecipients) {
    problems.push({ field: 'operation.to', problem: RULES.recipientsTooMany.message(unique.size, policy.maxRecipients) });
  }
  return { to: [...unique], invalid, duplicatesRemoved, problems };
}

function validateVoice(operation: VoiceOperation, policy: ValidationPolicy, problems: FieldProblem[]): SendParts | undefined {
  let national: string | undefined;
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
  }

  const code = operation.code;
  if (!CODE_FORMAT.test(code)) {
    problems.push({ field: 'operation.code', problem: RULES.codeFormat.message(codePoints(code), ASCII_DIGITS.test(code)) });
  }

  if (national === undefined || problems.length > 0) return undefined;
  return {
    request: { operation: 'sms.voice.verification.send', body: { to: national, code } },
    rejectedRecipients: [],
    duplicatesRemoved: 0,
  };
}
