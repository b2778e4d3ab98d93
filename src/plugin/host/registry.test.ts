import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mergeRegistrations, scanPluginDirs, validateListing } from './registry.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-registry-'));
  dirs.push(d);
  return d;
}

function file(p: string, mode: number): void {
  fs.mkdirSync(path.dirname(p), { recursive: true });
  fs.writeFileSync(p, '#!/bin/sh\n');
  fs.chmodSync(p, mode);
}

describe('scanPluginDirs', () => {
  it('finds executables recursively, follows symlinks once, skips node_modules and hidden dirs', async () => {
    const d = tmp();
    file(path.join(d, 'a'), 0o755);
    file(path.join(d, 'sub', 'deeper', 'b'), 0o700);
    file(path.join(d, 'readme.txt'), 0o644);
    file(path.join(d, 'node_modules', '.bin', 'tool'), 0o755);
    file(path.join(d, '.git', 'hook'), 0o755);
    fs.symlinkSync(path.join(d, 'a'), path.join(d, 'sub', 'link-to-a'));
    fs.symlinkSync(path.join(d, 'missing'), path.join(d, 'dangling'));
    const real = fs.realpathSync(d);
    expect(await scanPluginDirs([d])).toEqual({ executables: [path.join(real, 'a'), path.join(real, 'sub', 'deeper', 'b')], refused: [] });
  });

  it('refuses group- and world-writable plugin files and directories, naming each and why', async () => {
    const d = tmp();
    const real = fs.realpathSync(d);
    file(path.join(d, 'good'), 0o755);
    file(path.join(d, 'group'), 0o775);
    file(path.join(d, 'world'), 0o757);
    file(path.join(d, 'open', 'inner'), 0o755);
    fs.chmodSync(path.join(d, 'open'), 0o777);
    file(path.join(d, 'notes.txt'), 0o666); // not executable: not a plugin, not checked
    expect(await scanPluginDirs([d])).toEqual({
      executables: [path.join(real, 'good')],
      refused: [
        `plugin directory ${real}/open is world-writable (mode 0777); make it writable by its owner only (chmod go-w)`,
        `plugin file ${real}/group is group-writable (mode 0775); make it writable by its owner only (chmod go-w)`,
        `plugin file ${real}/world is world-writable (mode 0757); make it writable by its owner only (chmod go-w)`,
      ],
    });
  });

  it('accepts files of its own uid and root, refuses files of other users', async () => {
    const d = tmp();
    const real = fs.realpathSync(d);
    file(path.join(d, 'root-owned'), 0o755);
    file(path.join(d, 'own'), 0o755);
    file(path.join(d, 'other'), 0o755);
    // The tests run as root: chown sets any owner; the server's uid is taken as 65532.
    fs.chownSync(path.join(d, 'own'), 65532, 65532);
    fs.chownSync(path.join(d, 'other'), 12345, 12345);
    fs.chownSync(d, 65532, 65532);
    expect(await scanPluginDirs([d], { uid: 65532 })).toEqual({
      executables: [path.join(real, 'own'), path.join(real, 'root-owned')],
      refused: [`plugin file ${real}/other is owned by uid 12345, not by this server's uid 65532 or root`],
    });
    file(path.join(d, 'theirs', 'inner'), 0o755);
    fs.chownSync(path.join(d, 'theirs'), 12345, 12345);
    expect((await scanPluginDirs([d], { uid: 65532 })).refused).toEqual([
      `plugin directory ${real}/theirs is owned by uid 12345, not by this server's uid 65532 or root`,
      `plugin file ${real}/other is owned by uid 12345, not by this server's uid 65532 or root`,
    ]);
  });

  it('does not check the configured directory itself (an emptyDir mount is 0777), only what is inside', async () => {
    const d = tmp();
    file(path.join(d, 'good'), 0o755);
    fs.chmodSync(d, 0o777);
    fs.chownSync(d, 12345, 12345);
    expect(await scanPluginDirs([d])).toEqual({ executables: [path.join(fs.realpathSync(d), 'good')], refused: [] });
  });

  it('does not follow symlinks that resolve outside the plugin directory', async () => {
    const d = tmp();
    const outside = tmp();
    const real = fs.realpathSync(d);
    file(path.join(outside, 'evil'), 0o755);
    file(path.join(outside, 'dir', 'evil2'), 0o755);
    file(path.join(d, 'sub', 'fine'), 0o755);
    fs.symlinkSync(path.join(outside, 'evil'), path.join(d, 'to-file'));
    fs.symlinkSync(path.join(outside, 'dir'), path.join(d, 'to-dir'));
    fs.symlinkSync('../sub/fine', path.join(d, 'sub', 'link-inside'));
    fs.symlinkSync(path.join(d, 'sub', '..', '..'), path.join(d, 'up'));
    const realOut = fs.realpathSync(outside);
    expect(await scanPluginDirs([d])).toEqual({
      executables: [path.join(real, 'sub', 'fine')],
      refused: [
        `plugin symlink ${real}/to-dir resolves to ${realOut}/dir, outside the plugin directory ${real}; copy the plugin into the directory instead`,
        `plugin symlink ${real}/to-file resolves to ${realOut}/evil, outside the plugin directory ${real}; copy the plugin into the directory instead`,
        `plugin symlink ${real}/up resolves to ${path.dirname(real)}, outside the plugin directory ${real}; copy the plugin into the directory instead`,
      ],
    });
  });

  it('names a directory it cannot read', async () => {
    await expect(scanPluginDirs(['/nonexistent/stowage-plugins'])).rejects.toThrow(/cannot scan plugin directory \/nonexistent\/stowage-plugins/);
  });
});

describe('validateListing', () => {
  it('accepts good names and reports malformed, unknown-kind and repeated entries', () => {
    const { plugins, problems } = validateListing('/p/x', [
      { kind: 'ObjectStore', rawKind: 1, name: 'example.com/store' },
      { kind: 'ObjectStore', rawKind: 1, name: 'Example.com/Store' },
      { kind: 'BackupItemAction', rawKind: 2, name: 'no-slash' },
      { kind: undefined, rawKind: 42, name: 'example.com/future' },
      { kind: 'ObjectStore', rawKind: 1, name: 'example.com/store' },
      { kind: 'VolumeSnapshotter', rawKind: 5, name: 'example.com/store' },
    ]);
    expect(plugins.map((p) => `${p.kind} ${p.name}`)).toEqual(['ObjectStore example.com/store', 'VolumeSnapshotter example.com/store']);
    expect(problems).toHaveLength(4);
    expect(problems[0]).toContain('"Example.com/Store", which is not a valid plugin name');
    expect(problems[1]).toContain('"no-slash"');
    expect(problems[2]).toContain('unknown kind 42');
    expect(problems[3]).toContain('lists ObjectStore example.com/store twice');
    expect(problems.every((p) => p.includes('/p/x'))).toBe(true);
  });

  it('reports an executable that lists nothing', () => {
    expect(validateListing('/p/empty', []).problems).toEqual(['plugin executable /p/empty lists no plugins']);
  });
});

describe('mergeRegistrations', () => {
  it('rejects a name served by two executables, naming both', () => {
    const { plugins, problems } = mergeRegistrations([
      [{ kind: 'ObjectStore', name: 'stowage.dev/aws', executable: 'stowage run-plugins' }],
      [
        { kind: 'ObjectStore', name: 'stowage.dev/aws', executable: '/plugins/evil' },
        { kind: 'BackupItemAction', name: 'stowage.dev/aws', executable: '/plugins/evil' },
      ],
    ]);
    expect(plugins).toHaveLength(2);
    expect(problems).toEqual(['duplicate plugin: ObjectStore stowage.dev/aws is served by both stowage run-plugins and /plugins/evil']);
  });
});
