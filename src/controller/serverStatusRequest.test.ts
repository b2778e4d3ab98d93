// Unit tests for the ServerStatusRequest helpers; the controller itself runs against the real apiserver in test/cli/.
import { describe, expect, it } from 'vitest';
import { expiresAt, pluginInfos } from './serverStatusRequest.js';

describe('server status', () => {
  it('lists plugins sorted by kind, then name', () => {
    expect(pluginInfos([
      { name: 'b/x', kind: 'ObjectStore' },
      { name: 'a/y', kind: 'ObjectStore' },
      { name: 'z/z', kind: 'BackupItemAction' },
    ])).toEqual([
      { name: 'z/z', kind: 'BackupItemAction' },
      { name: 'a/y', kind: 'ObjectStore' },
      { name: 'b/x', kind: 'ObjectStore' },
    ]);
  });

  it('expires a processed request a minute after it was processed', () => {
    const req = { apiVersion: 'stowage.dev/v1', kind: 'ServerStatusRequest', metadata: { name: 'r' }, status: { phase: 'Processed', processedTimestamp: '2025-01-01T00:00:00Z' } } as const;
    expect(expiresAt(req)).toBe(Date.parse('2025-01-01T00:01:00Z'));
    expect(expiresAt({ ...req, status: {} })).toBe(0);
  });
});
