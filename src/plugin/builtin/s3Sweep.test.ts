import { describe, expect, it } from 'vitest';
import { staleUploads, type PendingUpload } from './s3Sweep.js';
import { UPLOAD_MARKER_INFIX, uploadMarkerKey } from './s3Upload.js';

const START = Date.parse('2026-12-01T10:00:00Z');
const up = (key: string, uploadId: string, initiated: number | undefined): PendingUpload => ({ key, uploadId, initiated: initiated === undefined ? undefined : new Date(initiated) });

describe('staleUploads', () => {
  it('picks uploads started before this process or older than the stale age, never its own', () => {
    const uploads = [
      up('p/backups/a/a.tar.gz', 'killed', START - 30_000),
      up('p/backups/b/b.tar.gz', 'mine', START - 30_000),
      up('p/backups/c/c.tar.gz', 'someone-else-now', START + 48 * 3600_000 - 60_000),
      up('p/backups/d/d.tar.gz', 'ancient', START + 60_000),
      up('p/backups/e/e.tar.gz', 'no-date', undefined),
    ];
    const picked = staleUploads(uploads, { processStartMs: START, nowMs: START + 48 * 3600_000, live: new Set(['mine']), staleAgeMs: 47 * 3600_000 });
    expect(picked.map((u) => u.uploadId)).toEqual(['killed', 'ancient']);
    // Two minutes after the start, with the default stale age: only the killed writer's upload.
    const soon = staleUploads(uploads.slice(0, 2), { processStartMs: START, nowMs: START + 120_000, live: new Set(['mine']) });
    expect(soon.map((u) => u.uploadId)).toEqual(['killed']);
  });
});

describe('uploadMarkerKey', () => {
  it('sits beside the key and is bound to the secret, the bucket, the key and the upload id', () => {
    const secret = Buffer.alloc(32, 7);
    const m = uploadMarkerKey(secret, 'b', 'p/backups/a/a.tar.gz', 'u1');
    expect(m).toMatch(new RegExp(`^p/backups/a/a\\.tar\\.gz${UPLOAD_MARKER_INFIX}[0-9a-f]{32}$`));
    expect(uploadMarkerKey(secret, 'b', 'p/backups/a/a.tar.gz', 'u1')).toBe(m);
    // Another upload at the same key, another bucket, or another secret: another name, so a marker proves one upload only.
    expect(new Set([
      m,
      uploadMarkerKey(secret, 'b', 'p/backups/a/a.tar.gz', 'u2'),
      uploadMarkerKey(secret, 'c', 'p/backups/a/a.tar.gz', 'u1'),
      uploadMarkerKey(Buffer.alloc(32, 8), 'b', 'p/backups/a/a.tar.gz', 'u1'),
    ]).size).toBe(4);
  });
});
