import type { IncomingMessage } from 'node:http';

/**
 * A request's body, keeping at most `maxBytes` of it in memory: undefined when it was longer (the
 * caller answers 413). Resolves when the body has ended.
 */
export function readCappedBody(req: IncomingMessage, maxBytes: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > maxBytes ? undefined : Buffer.concat(chunks)));
  });
}
