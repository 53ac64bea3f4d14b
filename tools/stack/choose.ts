/**
 * Which way to provide the stack, decided from probe results alone (no I/O here, so every branch
 * is unit-tested): the probes live in containers.ts, the starting in index.ts.
 */

/** What probing the Docker engine found. */
export type DockerProbe =
  | { readonly reachable: false; readonly detail: string }
  /** `unavailable`: images neither present locally nor pullable, with the pull's error. */
  | { readonly reachable: true; readonly unavailable: readonly { readonly image: string; readonly error: string }[] };

export interface StackChoice {
  readonly mode: 'docker' | 'local';
  /** Said to the operator, and part of the error when local processes cannot start either. */
  readonly reason: string;
}

/**
 * SMS_WORKER_STACK=docker|local forces a mode (`docker` is not probed: it then fails with the
 * engine's own error). Otherwise Docker when its engine answers and every image is there or can be
 * pulled; local processes when there is no engine, or an engine that cannot get the images
 * (an air-gapped machine with Docker).
 */
export function chooseStack(forced: 'docker' | 'local' | undefined, docker: DockerProbe | undefined): StackChoice {
  if (forced === 'local') return { mode: 'local', reason: 'SMS_WORKER_STACK=local' };
  if (forced === 'docker') return { mode: 'docker', reason: 'SMS_WORKER_STACK=docker' };
  if (docker === undefined) throw new Error('chooseStack: Docker must be probed unless SMS_WORKER_STACK forces a mode');
  if (!docker.reachable) return { mode: 'local', reason: `no Docker engine is reachable (${docker.detail})` };
  if (docker.unavailable.length === 0) return { mode: 'docker', reason: 'a Docker engine is reachable and has the images' };
  const images = docker.unavailable.map((u) => `${u.image} (${u.error})`).join('; ');
  return { mode: 'local', reason: `a Docker engine is reachable but cannot pull ${images}` };
}

/** SMS_WORKER_STACK: unset/empty, or one of the two modes; anything else is a typo worth stopping for. */
export function parseForcedMode(value: string | undefined): 'docker' | 'local' | undefined {
  if (value === undefined || value === '') return undefined;
  if (value === 'docker' || value === 'local') return value;
  throw new Error(`SMS_WORKER_STACK must be docker or local (got ${JSON.stringify(value)})`);
}
