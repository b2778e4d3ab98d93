import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { credentialsDir, removeAllCredentialFiles, removeCredentialFiles, writeCredentialFile } from './credentialFiles.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function scratch(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-creds-unit-'));
  dirs.push(d);
  return d;
}

describe('credential files', () => {
  it('writes a private file per location, stable for the same content, replaced when it changes', () => {
    const s = scratch();
    const a = writeCredentialFile(s, 'loc-a', Buffer.from('one'));
    expect(path.dirname(a)).toBe(path.join(credentialsDir(s), 'loc-a'));
    expect(fs.readFileSync(a, 'utf8')).toBe('one');
    expect(fs.statSync(a).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(a)).mode & 0o777).toBe(0o700);
    expect(writeCredentialFile(s, 'loc-a', Buffer.from('one'))).toBe(a);
    const b = writeCredentialFile(s, 'loc-b', Buffer.from('one'));
    expect(b).not.toBe(a);
    const rotated = writeCredentialFile(s, 'loc-a', Buffer.from('two'));
    expect(rotated).not.toBe(a);
    expect(fs.readdirSync(path.dirname(a))).toEqual([path.basename(rotated)]);
    expect(fs.existsSync(b)).toBe(true);
  });

  it('removes one location\'s files, or all of them', () => {
    const s = scratch();
    const a = writeCredentialFile(s, 'loc-a', Buffer.from('one'));
    const b = writeCredentialFile(s, 'loc-b', Buffer.from('two'));
    removeCredentialFiles(s, 'loc-a');
    expect(fs.existsSync(path.dirname(a))).toBe(false);
    expect(fs.existsSync(b)).toBe(true);
    removeCredentialFiles(s, 'never-written');
    removeAllCredentialFiles(s);
    expect(fs.existsSync(credentialsDir(s))).toBe(false);
    removeAllCredentialFiles(s);
  });

  it('refuses a name that is not a location name rather than write outside its directory', () => {
    const s = scratch();
    expect(() => writeCredentialFile(s, '../escape', Buffer.from('x'))).toThrow('invalid backup storage location name "../escape" for a credentials file');
    expect(() => removeCredentialFiles(s, '..')).toThrow('invalid backup storage location name ".." for a credentials file');
  });
});
