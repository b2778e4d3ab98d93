import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { setLogSink } from '../sdk/logger.js';
import { FilesystemObjectStore } from './filesystem.js';

let root: string;
let store: FilesystemObjectStore;
const logged: string[] = [];

async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield Buffer.from(p);
}

async function read(body: AsyncIterable<Uint8Array>): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of body) out.push(Buffer.from(c));
  return Buffer.concat(out).toString();
}

beforeEach(async () => {
  setLogSink((line) => logged.push(line));
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'stowage-fs-store-'));
  store = new FilesystemObjectStore();
  await store.init({ root: path.join(root, 'store') });
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
});

describe('FilesystemObjectStore', () => {
  it('creates the root, stores, streams, lists and deletes objects', async () => {
    await store.putObject('b', 'backups/one/one.tar.gz', bytes('hello ', 'world'));
    await store.putObject('b', 'backups/two/stowage-backup.json', bytes('{}'));
    await store.putObject('b', 'restores/r1/log.gz', bytes('x'));
    expect(await read(await store.getObject('b', 'backups/one/one.tar.gz'))).toBe('hello world');
    expect(await read(await store.getObjectFrom('b', 'backups/one/one.tar.gz', 6))).toBe('world');
    expect(await store.objectExists('b', 'backups/one/one.tar.gz')).toBe(true);
    expect(await store.objectExists('b', 'backups/one')).toBe(false);
    expect(await store.listObjects('b', 'backups/')).toEqual(['backups/one/one.tar.gz', 'backups/two/stowage-backup.json']);
    expect(await store.listObjects('b', 'backups/o')).toEqual(['backups/one/one.tar.gz']);
    expect(await store.listObjects('b', '')).toHaveLength(3);
    expect(await store.listCommonPrefixes('b', '', '/')).toEqual(['backups/', 'restores/']);
    expect(await store.listCommonPrefixes('b', 'backups/', '/')).toEqual(['backups/one/', 'backups/two/']);
    expect(await store.listObjects('missing-bucket', '')).toEqual([]);
    await store.deleteObject('b', 'backups/one/one.tar.gz');
    await store.deleteObject('b', 'backups/one/one.tar.gz'); // deleting a missing object is fine
    expect(await store.listCommonPrefixes('b', 'backups/', '/')).toEqual(['backups/two/']);
    expect(fs.existsSync(path.join(root, 'store/b/backups/one'))).toBe(false);
    expect(await store.createSignedURL('b', 'restores/r1/log.gz', 60)).toBe(`file://${fs.realpathSync(root)}/store/b/restores/r1/log.gz`);
  });

  it("reports a missing object with code 'NotFound'", async () => {
    const err = await store.getObject('b', 'nope').catch((e: unknown) => e as { code?: string; message: string });
    expect(err).toMatchObject({ code: 'NotFound', message: 'object b/nope not found' });
  });

  it('writes atomically: a failing body leaves neither the object nor a temp file, and keeps the old version', async () => {
    await store.putObject('b', 'k', bytes('old'));
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('new-partial');
      throw new Error('source broke');
    }
    await expect(store.putObject('b', 'k', failing())).rejects.toThrow('source broke');
    expect(await read(await store.getObject('b', 'k'))).toBe('old');
    expect(fs.readdirSync(path.join(root, 'store/b'))).toEqual(['k']);
  });

  it('hides in-progress uploads from listings', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    async function* slow(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('part');
      await gate;
    }
    const put = store.putObject('b', 'dir/slow', slow());
    await new Promise((r) => setTimeout(r, 50));
    expect(await store.listObjects('b', '')).toEqual([]);
    expect(await store.objectExists('b', 'dir/slow')).toBe(false);
    release();
    await put;
    expect(await store.listObjects('b', '')).toEqual(['dir/slow']);
  });

  it.each([
    ['../escape', 'it contains a ".." segment'],
    ['a/../../escape', 'it contains a ".." segment'],
    ['/etc/passwd', 'it is absolute'],
    ['a//b', 'it contains an empty segment'],
    ['./a', 'it contains a "." segment'],
    ['a\\..\\b', 'it contains a backslash'],
    ['a\0b', 'it contains a NUL byte'],
    ['.stowage-tmp-x', 'segments may not start with .stowage-tmp-'],
  ])('refuses key %j', async (key, why) => {
    const message = `object key ${JSON.stringify(key)} is refused: ${why}`;
    await expect(store.putObject('b', key, bytes('x'))).rejects.toThrow(message);
    await expect(store.getObject('b', key)).rejects.toThrow(message);
    await expect(store.deleteObject('b', key)).rejects.toThrow(message);
    await expect(store.objectExists('b', key)).rejects.toThrow(message);
    await expect(store.createSignedURL('b', key, 60)).rejects.toThrow(message);
    expect(fs.readdirSync(root)).toEqual(['store']);
  });

  it.each(['..', '.', 'a/b', ''])('refuses bucket %j', async (bucket) => {
    await expect(store.putObject(bucket, 'k', bytes('x'))).rejects.toThrow('is not allowed');
  });

  it('refuses to follow a symlink out of the root', async () => {
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    fs.mkdirSync(path.join(root, 'store/b'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'store/b/link'));
    await expect(store.putObject('b', 'link/file', bytes('x'))).rejects.toThrow('leads outside the store root');
    expect(fs.readdirSync(outside)).toEqual([]);
  });

  it('objectExists and deleteObject do not follow a symlink out of the root either', async () => {
    const outside = path.join(root, 'outside');
    fs.mkdirSync(outside);
    fs.writeFileSync(path.join(outside, 'victim'), 'keep me');
    fs.mkdirSync(path.join(root, 'store/b'), { recursive: true });
    fs.symlinkSync(outside, path.join(root, 'store/b/link'));
    fs.symlinkSync(path.join(outside, 'victim'), path.join(root, 'store/b/file-link'));
    // The store's directory is not named: the message reaches statuses and the CLI.
    await expect(store.objectExists('b', 'link/victim')).rejects.toThrow('path <store root>/b/link/victim leads outside the store root <store root>');
    await expect(store.objectExists('b', 'file-link')).rejects.toThrow('path <store root>/b/file-link leads outside the store root <store root>');
    await expect(store.deleteObject('b', 'link/victim')).rejects.toThrow('path <store root>/b/link leads outside the store root <store root>');
    expect(fs.readFileSync(path.join(outside, 'victim'), 'utf8')).toBe('keep me');
    // A missing key below a real directory is still simply absent.
    expect(await store.objectExists('b', 'nothing/here')).toBe(false);
    await expect(store.deleteObject('b', 'nothing/here')).resolves.toBeUndefined();
  });

  it('stores keys whose segments are longer than a file name may be, and lists them as they were given', async () => {
    const name = `${'backup-of-'.repeat(25)}xyz`;
    const longer = `${'ü'.repeat(200)}.json`;
    const keys = [`backups/${name}/${name}.tar.gz`, `backups/${name}/${name}-resource-list.json.gz`, `backups/${name}/stowage-backup.json`, `restores/${name}/restore-${name}-logs.gz`, `other/${longer}`];
    for (const k of keys) await store.putObject('b', k, bytes(k));
    for (const k of keys) {
      expect(await read(await store.getObject('b', k))).toBe(k);
      expect(await store.objectExists('b', k)).toBe(true);
    }
    expect(await store.listObjects('b', '')).toEqual([...keys].sort());
    expect(await store.listObjects('b', `backups/${name}/`)).toEqual(keys.filter((k) => k.startsWith('backups/')).sort());
    expect(await store.listCommonPrefixes('b', 'backups/', '/')).toEqual([`backups/${name}/`]);
    // Every name on disk fits, temp files' included (none is left).
    const names: string[] = [];
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        names.push(e.name);
        if (e.isDirectory()) walk(path.join(d, e.name));
      }
    };
    walk(path.join(root, 'store'));
    expect(Math.max(...names.map((n) => Buffer.byteLength(n)))).toBeLessThanOrEqual(255);
    expect(names.filter((n) => n.startsWith('.stowage-tmp-'))).toEqual([]);
    // Deleting every key leaves nothing behind, records of long names included.
    for (const k of keys) await store.deleteObject('b', k);
    expect(await store.listObjects('b', '')).toEqual([]);
    expect(fs.readdirSync(path.join(root, 'store', 'b'))).toEqual([]);
  });

  it('refuses keys that use its record prefix, and names no server path in its errors', async () => {
    await expect(store.putObject('b', 'x/.stowage-long-abc', bytes('x'))).rejects.toThrow('segments may not start with .stowage-long-');
    await store.putObject('b', 'file', bytes('x'));
    const err = await store.putObject('b', 'file/under', bytes('x')).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toContain('<store root>');
    expect((err as Error).message).not.toContain(root);
  });

  it('validates its config', async () => {
    const s = new FilesystemObjectStore();
    await expect(s.init({})).rejects.toThrow("config key 'root' (a directory) is required");
    await expect(s.init({ root: 'relative/dir' })).rejects.toThrow('must be an absolute path');
    await expect(s.init({ root, typo: 'x' })).rejects.toThrow('unknown config key(s) typo');
    fs.writeFileSync(path.join(root, 'file'), '');
    await expect(s.init({ root: path.join(root, 'file') })).rejects.toThrow();
    await expect(new FilesystemObjectStore().listObjects('b', '')).rejects.toThrow('Init was not called');
  });
});
