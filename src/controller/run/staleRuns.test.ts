import { describe, expect, it } from 'vitest';
import { newBackup, type Backup, type BackupStatus } from '../../apis/v1/index.js';
import { judgeMarker } from './staleRuns.js';

const STARTED = '2026-12-02T01:00:00Z';
const stale = (): Backup => ({ ...newBackup('b1', 'stowage', {}), status: { phase: 'InProgress', startTimestamp: STARTED } });
const marker = (status: BackupStatus): Backup => ({ ...newBackup('b1', 'stowage', {}), status });

describe('judgeMarker', () => {
  it('takes the phase and the whole status of this run\'s stowage-backup.json', () => {
    const st: BackupStatus = {
      phase: 'PartiallyFailed', startTimestamp: STARTED, completionTimestamp: '2026-12-02T01:00:09Z', expiration: '2027-01-01T01:00:00Z',
      formatVersion: '1.1.0', progress: { totalItems: 7, itemsBackedUp: 7 }, warnings: 1, errors: 2,
    };
    expect(judgeMarker(stale(), marker(st), 'default')).toEqual({ phase: 'PartiallyFailed', status: st, location: 'default' });
  });

  it('fails a run with no stowage-backup.json, saying the backup is incomplete', () => {
    const v = judgeMarker(stale(), undefined, 'default');
    expect(v).toEqual({ phase: 'Failed', why: 'location default holds no stowage-backup.json for it, so the backup is incomplete' });
  });

  it('does not take the marker of another run of the same name', () => {
    const v = judgeMarker(stale(), marker({ phase: 'Completed', startTimestamp: '2026-11-30T00:00:00Z' }), 'default');
    expect(v.phase).toBe('Failed');
    expect(v).toMatchObject({ why: expect.stringContaining('belongs to another run of this name (started 2026-11-30T00:00:00Z, this one 2026-12-02T01:00:00Z)') });
  });

  it('does not take a marker that records an unfinished phase', () => {
    const v = judgeMarker(stale(), marker({ phase: 'InProgress', startTimestamp: STARTED }), 'default');
    expect(v).toMatchObject({ phase: 'Failed', why: expect.stringContaining('records phase InProgress') });
  });
});
