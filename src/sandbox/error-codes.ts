/**
 * Error codes of the sandbox. The service's real codes are unpublished apart from 105400 and
 * 101301, so the sandbox answers its own validations with codes in the 900xxx range — documented
 * here, and not something the worker may branch on (it branches on FailureClass only).
 */
export interface SandboxErrorDefinition {
  readonly code: string;
  readonly message: string;
  readonly httpStatus: number;
  readonly meaning: string;
}

function define(code: string, message: string, meaning: string, httpStatus = 400): SandboxErrorDefinition {
  return { code, message, httpStatus, meaning };
}

export const SANDBOX_ERRORS = {
  // The two codes the spec publishes, answered exactly as it shows them.
  insufficientFunds: define('105400', 'InsufficientFunds', 'The send costs more than the balance; nothing is charged.'),
  noUpstream: define('101301', '未设置有效的上游服务商', 'No valid upstream: a recipient region without a route, or a voice call to a non-domestic number.'),
  // Authentication.
  missingAccessKeyId: define('900100', 'MissingAccessKeyId', 'The accessKeyId query parameter is absent or empty.'),
  invalidAccessKeyId: define('900101', 'InvalidAccessKeyId', 'accessKeyId differs from the key the sandbox was started with.'),
  invalidSignature: define('900102', 'InvalidSignature', 'HMAC mode: signature absent, algorithm other than hmac-sha256, or the signature does not match.'),
  timestampOutOfRange: define(
    '900103',
    'TimestampOutOfRange',
    'HMAC mode: timestamp is not integer milliseconds or is more than 10 minutes from the sandbox clock.',
  ),
  invalidNonce: define('900104', 'InvalidNonce', 'HMAC mode: nonce shorter than 8 or longer than 64 characters.'),
  // Request shape.
  unknownAction: define('900200', 'UnknownAction', 'The action query parameter is absent or not one of the two operations.'),
  invalidBody: define('900201', 'InvalidBody', 'The body is not a JSON object (or is larger than 1 MiB).'),
  methodNotAllowed: define('900202', 'MethodNotAllowed', 'Only POST is served.'),
  // Body fields.
  missingRecipient: define('900300', 'MissingRecipient', '`to` is absent, empty, or not a string (array of strings for text).'),
  invalidPhoneNumber: define(
    '900301',
    'InvalidPhoneNumber',
    'A number libphonenumber-js does not accept as valid (national numbers are read in the home region).',
  ),
  tooManyRecipients: define('900302', 'TooManyRecipients', 'Text: more than 1000 recipients. Voice: `to` is not a single string.'),
  invalidMessageSignature: define('900310', 'InvalidMessageSignature', '`signature` absent or not 2–16 characters (code points).'),
  contentTemplateConflict: define('900311', 'ContentTemplateConflict', 'Not exactly one of `content` and `templateId`.'),
  invalidContent: define('900312', 'InvalidContent', '`content` is not a non-empty string.'),
  templateDataWithoutTemplate: define('900313', 'TemplateDataWithoutTemplate', '`templateData` given without `templateId`.'),
  unknownTemplate: define('900314', 'UnknownTemplate', '`templateId` is not in the sandbox template table.'),
  invalidTemplateData: define('900315', 'InvalidTemplateData', '`templateData` is not an object of strings, or lacks a variable the template uses.'),
  invalidVerificationCode: define('900320', 'InvalidVerificationCode', 'Voice `code` is not 4 or 6 ASCII digits.'),
  // Injected faults (see faults.ts).
  tooManyRequests: define('900429', 'TooManyRequests', 'Injected throttling (with Retry-After).', 429),
  internalError: define('900500', 'InternalError', 'Injected server error.', 500),
  badGateway: define('900502', 'BadGateway', 'Injected gateway error.', 502),
  serviceUnavailable: define('900503', 'ServiceUnavailable', 'Injected unavailability or "down" switch (with Retry-After).', 503),
  // Admin routes.
  notFound: define('900404', 'NotFound', 'Unknown /_sandbox/ admin route.', 404),
  invalidAdminRequest: define('900400', 'InvalidAdminRequest', 'An admin route got a body it cannot use.'),
} as const satisfies Record<string, SandboxErrorDefinition>;

export type SandboxErrorKey = keyof typeof SANDBOX_ERRORS;

export interface ErrorEnvelope {
  readonly code: string;
  readonly message: string;
}

/** Failure body as the spec shows it: only `code` and `message`. */
export function errorEnvelope(key: SandboxErrorKey): ErrorEnvelope {
  const { code, message } = SANDBOX_ERRORS[key];
  return { code, message };
}
