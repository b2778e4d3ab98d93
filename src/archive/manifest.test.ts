import { describe, expect, it } from 'vitest';
import { manifestCheck, verifyManifest, type BackupManifest } from './manifest.js';

const sha = (c: string): string => c.repeat(64);
const manifest: BackupManifest = {
  formatVersion: '1.1.0',
  tarball: { sha256: sha('t'), bytes: 10 },
  entries: { 'metadata/version': sha('a'), 'resources/x/cluster/a.json': sha('b'), 'resources/x/cluster/b.json': sha('c') },
};

describe('manifestCheck', () => {
  it('accepts the archive that was written', () => {
    const check = manifestCheck(manifest);
    for (const [path, digest] of Object.entries(manifest.entries)) check.entry(path, digest);
    expect(check.finish({ sha256: sha('t') })).toEqual([]);
  });

  it('names a changed, an extra and a missing entry, and a changed tarball first', () => {
    const check = manifestCheck(manifest);
    check.entry('metadata/version', sha('a'));
    check.entry('resources/x/cluster/a.json', sha('9'));
    check.entry('resources/x/cluster/new.json', sha('d'));
    expect(check.finish({ sha256: sha('u') })).toEqual([
      `the tarball's SHA-256 is ${sha('u')}, the manifest says ${sha('t')}`,
      `resources/x/cluster/a.json has SHA-256 ${sha('9')}, the manifest says ${sha('b')}`,
      'resources/x/cluster/new.json is in the tarball but not in the manifest',
      'resources/x/cluster/b.json is in the manifest but not in the tarball',
    ]);
  });

  it('caps the list and counts the rest', () => {
    const check = manifestCheck(manifest, 2);
    for (let i = 0; i < 5; i++) check.entry(`extra/${i}`, sha('e'));
    const problems = check.finish({ sha256: sha('u') });
    // 1 tarball + 5 extra + 3 missing = 9 differences.
    expect(problems).toHaveLength(3);
    expect(problems[0]).toMatch(/^the tarball's SHA-256 is/);
    expect(problems[2]).toBe('and 7 more differences');
  });

  it('gives verifyManifest the same answers from a table of entries', () => {
    const entries = { ...manifest.entries, 'resources/x/cluster/b.json': sha('f') };
    expect(verifyManifest({ tarball: { sha256: sha('t'), bytes: 10 }, entries }, manifest)).toEqual([
      `resources/x/cluster/b.json has SHA-256 ${sha('f')}, the manifest says ${sha('c')}`,
    ]);
  });
});
