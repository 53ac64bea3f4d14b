import type { SendFootprint } from '../../contracts/validate.ts';
import { INSUFFICIENT_FUNDS_CODE, NO_UPSTREAM_CODE } from '../../provider/classify.ts';
import { ProviderError } from '../../provider/provider-error.ts';
import type { FailureClass, ProviderRequest } from '../../provider/types.ts';
import { describeRoute } from './refusal-scopes.ts';

/** Whether a refusal may pass if tried later (a route configured, the account topped up). */
function failureClassOf(code: string): FailureClass {
  return code === INSUFFICIENT_FUNDS_CODE ? 'insufficient-funds' : 'configuration';
}

/**
 * A command given up unsent because its route or cost stayed refused: FAILED with the service's
 * code, retryable (a later retry can succeed once the route is configured or funds are back). The
 * refusal is the service's, so its stage is PROVIDER.
 */
export function heldBackError(operation: ProviderRequest['operation'], code: string, detail: string, attempts: number): ProviderError {
  return new ProviderError({
    operation,
    code,
    message: detail,
    providerMessage: '',
    failureClass: failureClassOf(code),
    retryable: true,
    attempts,
    answered: true,
  });
}

/** The service's refusal of a command refused twice (or decided per command), naming its route, retryable. */
export function refusedAgainError(
  error: ProviderError,
  state: { readonly footprint: SendFootprint; readonly refusals: number },
  attempts: number,
): ProviderError {
  const what =
    error.code === NO_UPSTREAM_CODE
      ? `the route (${describeRoute(state.footprint.operation, state.footprint.regions)}) was refused`
      : `the balance did not cover this command (${state.footprint.costUnits} billed units expected)`;
  return new ProviderError({
    operation: error.operation,
    code: error.code,
    message: `${error.message}; ${what} ${state.refusals} time(s); not sent, retry later`,
    providerMessage: error.providerMessage,
    failureClass: error.failureClass,
    retryable: true,
    attempts,
    httpStatus: error.httpStatus,
    requestId: error.requestId,
    answered: error.answered,
    stopReason: error.stopReason,
  });
}

/** A command given up unsent after waiting FUNDS_PAUSE_MAX_MS for the account's funds: FAILED 105400, retryable. */
export function fundsPauseError(operation: ProviderRequest['operation'], maxMs: number, attempts: number): ProviderError {
  return heldBackError(
    operation,
    INSUFFICIENT_FUNDS_CODE,
    `the account had no funds (105400) for the ${maxMs} ms this command may wait (FUNDS_PAUSE_MAX_MS); not sent, retry later`,
    attempts,
  );
}
