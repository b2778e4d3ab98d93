import { describe, expect, it } from 'vitest';
import type { BackupStorageLocation } from '../../apis/v1/index.js';
import { locationProblem, specChangedSinceValidation } from './locations.js';

const NOW = Date.parse('2026-11-30T10:00:00Z');
const clock = { now: () => new Date(NOW) };
const ago = (ms: number): string => new Date(NOW - ms).toISOString();

function bsl(generation: number, status?: { phase: 'Available' | 'Unavailable'; observedGeneration: number; message?: string }): BackupStorageLocation {
  return {
    apiVersion: 'stowage.dev/v1', kind: 'BackupStorageLocation',
    metadata: { name: 'default', namespace: 'stowage', generation },
    spec: { provider: 'aws', objectStorage: { bucket: 'b' } },
    ...(status !== undefined ? { status } : {}),
  } as BackupStorageLocation;
}

describe('locationProblem', () => {
  it('lets a young run wait for a spec not validated yet, and fails an old one', () => {
    const edited = bsl(3, { phase: 'Unavailable', observedGeneration: 2, message: 'bucket "x" does not exist' });
    expect(locationProblem({ clock }, edited, ago(5_000))).toMatchObject({ wait: true, reason: expect.stringContaining('has not been validated since its spec changed (it was Unavailable: bucket "x"') });
    expect(locationProblem({ clock }, edited, ago(120_000))).toMatchObject({ wait: false });
    expect(locationProblem({ clock }, bsl(1), ago(1_000))).toMatchObject({ wait: true, reason: 'backup storage location "default" has not been validated yet' });
  });

  it('asks a young run on an Unavailable location to check the live spec, not an old one', () => {
    const down = bsl(2, { phase: 'Unavailable', observedGeneration: 2, message: 'unreachable' });
    expect(locationProblem({ clock }, down, ago(2_000))).toEqual({ reason: 'backup storage location "default" is Unavailable: unreachable', wait: false, recheck: true });
    expect(locationProblem({ clock }, down, ago(120_000))).toMatchObject({ wait: false, recheck: false });
    expect(locationProblem({ clock }, bsl(2, { phase: 'Available', observedGeneration: 2 }), ago(2_000))).toBeUndefined();
  });
});

describe('specChangedSinceValidation', () => {
  const reading = (live: BackupStorageLocation | Error) => ({
    namespace: 'stowage',
    client: { get: async () => { if (live instanceof Error) throw live; return live; } },
  }) as unknown as Parameters<typeof specChangedSinceValidation>[0];
  const cached = bsl(2, { phase: 'Unavailable', observedGeneration: 2 });

  it('sees an edit the cache does not show yet', async () => {
    expect(await specChangedSinceValidation(reading(bsl(3, { phase: 'Unavailable', observedGeneration: 2 })), cached)).toBe(true);
    expect(await specChangedSinceValidation(reading(bsl(2, { phase: 'Unavailable', observedGeneration: 2 })), cached)).toBe(false);
  });

  it('answers false when the location cannot be read', async () => {
    expect(await specChangedSinceValidation(reading(new Error('connection refused')), cached)).toBe(false);
  });
});
