import { describe, expect, it } from 'vitest';
import { DEFAULT_VALIDATION_POLICY, validateCommand } from '../../../src/contracts/validate.ts';
import type { SendCommand } from '../../../src/contracts/command.ts';
import { velocityVerdict, type SendValidation } from '../../../src/worker/guard/velocity-verdict.ts';
import type { VelocityRefusal } from '../../../src/worker/guard/velocity.ts';

const GB = '+447400123456';
const CN = '+8613800138000';
const SG = '+6581234567';

function validated(to: string[]): SendValidation {
  const command: SendCommand = {
    commandId: 'c1',
    createdAt: 0,
    operation: { kind: 'text', to, signature: 'Acme', content: 'Your code is 123456' },
    metadata: {},
    expiresAt: null,
  };
  const v = validateCommand(command, DEFAULT_VALIDATION_POLICY, 0);
  if (v.kind !== 'send') throw new Error(`not valid: ${JSON.stringify(v)}`);
  return v;
}

const refusal = (field: string): VelocityRefusal => ({
  field,
  region: 'GB',
  prefix: '+44 770',
  kind: 'prefix',
  rule: 'VELOCITY_PREFIX_PER_MINUTE',
  limit: 25,
  deploymentLimit: 100,
  blockedUntil: Date.UTC(2026, 0, 1, 12, 15),
  newlyBlocked: true,
});

const PROBLEM =
  "recipient's destination +44 770 (region GB) is over VELOCITY_PREFIX_PER_MINUTE (100 per minute for the deployment; this worker's limit 25); prefix blocked until 2026-01-01T12:15:00.000Z (DESTINATION_VELOCITY_LIMITED)";

describe('velocityVerdict (pure)', () => {
  it('validation hands the destinations of the recipients kept, in the order of the request', () => {
    const v = validated([CN, GB, CN]);
    expect(v.destinations).toEqual([
      { field: 'operation.to[0]', given: CN, region: 'CN', callingCode: '86', national: '13800138000' },
      { field: 'operation.to[1]', given: GB, region: 'GB', callingCode: '44', national: '7400123456' },
    ]);
  });

  it('nothing over a limit, or monitor mode: sent as validated', () => {
    const v = validated([CN, GB]);
    expect(velocityVerdict(v, [undefined, undefined], 'enforce', 'reject')).toEqual({ kind: 'send', validation: v });
    expect(velocityVerdict(v, [undefined, refusal('operation.to[1]')], 'monitor', 'reject')).toEqual({ kind: 'send', validation: v });
  });

  it('PARTIAL_RECIPIENTS=reject: the command is REJECTED, the detail names the recipient index, its prefix and the limit, never the number', () => {
    const verdict = velocityVerdict(validated([CN, GB]), [undefined, refusal('operation.to[1]')], 'enforce', 'reject');
    expect(verdict).toEqual({ kind: 'rejected', problems: [{ field: 'operation.to[1]', problem: PROBLEM }] });
    expect(JSON.stringify(verdict)).not.toContain('7400123456');
  });

  it('PARTIAL_RECIPIENTS=send-valid: only that recipient is dropped (listed in rejectedRecipients), the others are sent', () => {
    const verdict = velocityVerdict(validated([CN, GB, SG]), [undefined, refusal('operation.to[1]'), undefined], 'enforce', 'send-valid');
    expect(verdict.kind).toBe('send');
    if (verdict.kind !== 'send') return;
    const { request, rejectedRecipients, footprint, destinations } = verdict.validation;
    expect(request.operation === 'sms.message.send' && request.body.to).toEqual([CN, SG]);
    expect(rejectedRecipients).toEqual([{ to: GB, problem: PROBLEM }]);
    expect(footprint.regions).toEqual(['CN', 'SG']);
    expect(footprint.costUnits).toBeGreaterThanOrEqual(2);
    expect(destinations.map((d) => d.region)).toEqual(['CN', 'SG']);
  });

  it('send-valid with every recipient refused: REJECTED', () => {
    expect(velocityVerdict(validated([GB]), [refusal('operation.to[0]')], 'enforce', 'send-valid').kind).toBe('rejected');
  });
});
