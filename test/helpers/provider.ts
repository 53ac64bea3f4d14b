import { ProviderError } from '../../src/provider/provider-error.ts';

/** The ProviderError a send fails with; anything else (or success) fails the test. */
export async function failureOf(promise: Promise<unknown>): Promise<ProviderError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ProviderError) return error;
    throw error;
  }
  throw new Error('expected the send to fail');
}
