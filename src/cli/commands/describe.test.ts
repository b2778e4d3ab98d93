import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, formatRequester } from '../../auth/index.js';
import { metadataSection, requestedBy } from './describe.js';

describe('requestedBy', () => {
  it('names the stamped user and groups, or why nobody is known', () => {
    const stamp = formatRequester({ username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] });
    expect(requestedBy({ name: 'b', annotations: { [REQUESTER_ANNOTATION]: stamp } })).toBe('alice (groups: team-a)');
    expect(requestedBy({ name: 'b' })).toBe('<unknown: no stowage.dev/requester annotation>');
    expect(requestedBy({ name: 'b', annotations: { [REQUESTER_ANNOTATION]: 'x' } })).toBe('<unreadable: the stowage.dev/requester annotation is not JSON>');
  });

  it('is a line of the metadata section, and the stamp and its seal are not repeated among the annotations', () => {
    const stamp = formatRequester({ username: 'admin', uid: '', groups: ['system:masters'] });
    const text = metadataSection({ name: 'b', namespace: 'stowage', annotations: { note: 'x', [REQUESTER_ANNOTATION]: stamp, [SEAL_ANNOTATION]: 'v1 2026-01-01T00:00:00.000Z mac' } });
    expect(text).toMatch(/^Requested by: +admin \(groups: system:masters\)$/m);
    expect(text).toMatch(/^Annotations: +note=x$/m);
    expect(metadataSection({ name: 'b', annotations: { [REQUESTER_ANNOTATION]: stamp } })).toMatch(/^Annotations: +<none>$/m);
  });
});
