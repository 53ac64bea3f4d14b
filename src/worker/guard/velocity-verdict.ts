/**
 * What the velocity limits make of one validated command (pure): sent as validated, sent without
 * the recipients over a limit (PARTIAL_RECIPIENTS=send-valid), or REJECTED before anything is
 * spent with DESTINATION_VELOCITY_LIMITED and one detail per refused recipient (its field, its
 * destination prefix and region, the limit and until when it is blocked; never the number).
 */
import type { ValidationPolicy } from '../../contracts/policy.ts';
import type { FieldProblem } from '../../contracts/rules.ts';
import type { Validation } from '../../contracts/validate.ts';
import { DESTINATION_VELOCITY_LIMITED, type VelocityMode, type VelocityRefusal } from './velocity.ts';

export type SendValidation = Extract<Validation, { kind: 'send' }>;

export type VelocityVerdict =
  { readonly kind: 'send'; readonly validation: SendValidation } | { readonly kind: 'rejected'; readonly problems: readonly FieldProblem[] };

/** `recipient's destination +86 138 (region CN) is over VELOCITY_PREFIX_PER_MINUTE (…) (DESTINATION_VELOCITY_LIMITED)`. */
export function velocityProblem(refusal: VelocityRefusal, operation: 'text' | 'voice'): string {
  const who = operation === 'text' ? "recipient's" : "callee's";
  const window = refusal.rule.endsWith('_MINUTE') ? 'minute' : 'day';
  const share = refusal.limit === refusal.deploymentLimit ? '' : `; this worker's limit ${refusal.limit}`;
  return (
    `${who} destination ${refusal.prefix} (region ${refusal.region}) is over ${refusal.tenant === undefined ? '' : `tenant ${refusal.tenant}'s `}${refusal.rule} ` +
    `(${refusal.deploymentLimit} per ${window} for the deployment${share}); ${refusal.kind} blocked until ` +
    `${new Date(refusal.blockedUntil).toISOString()} (${DESTINATION_VELOCITY_LIMITED})`
  );
}

/**
 * `refusals` lines up with `validation.destinations`. Under `monitor` nothing changes. Under
 * `enforce` (and `hold`, once its wait is over), `reject` refuses the whole command for any refused recipient; `send-valid` drops
 * the refused ones into `rejectedRecipients` and sends the others, or rejects when none is left.
 */
export function velocityVerdict(
  validation: SendValidation,
  refusals: readonly (VelocityRefusal | undefined)[],
  mode: VelocityMode,
  partial: ValidationPolicy['partialRecipients'],
): VelocityVerdict {
  if (mode === 'monitor' || refusals.every((r) => r === undefined)) return { kind: 'send', validation };
  const operation = validation.request.operation === 'sms.message.send' ? 'text' : 'voice';
  const problems = refusals.flatMap((r) => (r === undefined ? [] : [{ field: r.field, problem: velocityProblem(r, operation) }]));
  const request = validation.request;
  if (partial === 'reject' || request.operation !== 'sms.message.send') return { kind: 'rejected', problems };

  const kept = validation.destinations.filter((_, i) => refusals[i] === undefined);
  if (kept.length === 0) return { kind: 'rejected', problems };
  const to = request.body.to.filter((_, i) => refusals[i] === undefined);
  const dropped = validation.destinations.flatMap((d, i) => {
    const r = refusals[i];
    return r === undefined ? [] : [{ to: d.given, problem: velocityProblem(r, operation) }];
  });
  const { footprint } = validation;
  return {
    kind: 'send',
    validation: {
      ...validation,
      request: { operation: request.operation, body: { ...request.body, to } },
      destinations: kept,
      rejectedRecipients: [...validation.rejectedRecipients, ...dropped],
      // Billed units per recipient can differ (home region or not): the share kept, rounded up.
      footprint: {
        ...footprint,
        regions: [...new Set(kept.map((d) => d.region))].sort(),
        costUnits: Math.max(1, Math.ceil((footprint.costUnits * kept.length) / validation.destinations.length)),
      },
    },
  };
}
