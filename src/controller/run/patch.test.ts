import { describe, expect, it } from 'vitest';
import { KubeError } from '../../kube/errors.js';
import { statusPatch, unlessChanged } from './patch.js';

const target = { verb: 'patch', resource: 'backups.stowage.dev', namespace: 's', name: 'b' };
const failing = (status: number, reason: string): Promise<never> => Promise.reject(new KubeError(target, status, reason, 'nope'));

describe('unlessChanged', () => {
  it('is true once the write is made, false when the object changed or went, and throws anything else', async () => {
    expect(await unlessChanged(Promise.resolve({}))).toBe(true);
    expect(await unlessChanged(failing(409, 'Conflict'))).toBe(false);
    expect(await unlessChanged(failing(404, 'NotFound'))).toBe(false);
    await expect(unlessChanged(failing(500, 'InternalError'))).rejects.toThrow('nope');
  });
});

describe('statusPatch', () => {
  it('is conditional only when a version is given', () => {
    expect(statusPatch({ phase: 'New' })).toEqual({ status: { phase: 'New' } });
    expect(statusPatch({ phase: 'New' }, '7')).toEqual({ metadata: { resourceVersion: '7' }, status: { phase: 'New' } });
  });
});
