import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { fromServiceError, toServiceError } from './errors.js';

/** What the client sees for a status the server sent (grpc-js carries code, details and trailers). */
function overTheWire(err: unknown): ServiceError {
  const sent = toServiceError(err);
  return Object.assign(new Error(sent.details ?? ''), { code: sent.code ?? status.UNKNOWN, details: sent.details ?? '', metadata: sent.metadata ?? new Metadata() });
}

describe('plugin errors across the wire', () => {
  it("keeps a refusal's code, so the host can tell it from an outage", () => {
    const refused = Object.assign(new Error('the object store refuses PutObject b/k: KeyTooLongError'), { code: 'Refused' });
    const got = fromServiceError(overTheWire(refused));
    expect(got.code).toBe('Refused');
    expect(got.message).toBe('the object store refuses PutObject b/k: KeyTooLongError');
    expect(got.fromPlugin).toBe(true);
  });

  it('keeps NotFound, and gives other errors no code', () => {
    expect(fromServiceError(overTheWire(Object.assign(new Error('object b/k not found'), { code: 'NotFound' }))).code).toBe('NotFound');
    expect(fromServiceError(overTheWire(new Error('connect ECONNREFUSED'))).code).toBeUndefined();
  });

  it('does not take a refusal from a trailer the plugin did not set as a plugin error', () => {
    const md = new Metadata();
    md.set('stowage-error-code', 'Refused');
    const forged = Object.assign(new Error('x'), { code: status.UNKNOWN, details: 'x', metadata: md });
    expect(fromServiceError(forged).code).toBeUndefined();
  });
});
