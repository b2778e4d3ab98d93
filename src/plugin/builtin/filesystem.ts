// stowage.dev/filesystem: an object store in a local directory (config key `root`), the embedded
// default for single-node use and the demo. Buckets are directories under the root; writes go to a
// temp file that is renamed into place, so readers never see half an object. Init sweeps the temp
// files killed writers left under the location (fsSweep.ts). The `caCert` and `credentialsFile`
// keys every location may pass mean nothing for a local directory and are ignored.
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ObjectStore, PluginConfig, ResumableGetObject } from '../api/index.js';
import { log } from '../sdk/index.js';
import { heldTempFiles, scheduleSweep, sweepTempFiles } from './fsSweep.js';
import { checkBucket, keySegments, TEMP_PREFIX, UnsafeKeyError } from './keys.js';
import { diskName, forgetLongSegment, LONG_NAME_PREFIX, longSegmentRecord, segmentOf, truncateBytes } from './longNames.js';

const CONFIG_KEYS = new Set(['root', 'bucket', 'prefix', 'caCert', 'credentialsFile']);

class NotFoundError extends Error {
  readonly code = 'NotFound';
}

function isErrno(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as NodeJS.ErrnoException).code === code;
}

export class FilesystemObjectStore implements ObjectStore, ResumableGetObject {
  private root = '';

  async init(config: PluginConfig): Promise<void> {
    const unknown = Object.keys(config).filter((k) => !CONFIG_KEYS.has(k));
    if (unknown.length > 0) throw new Error(`filesystem object store: unknown config key(s) ${unknown.join(', ')} (known: root)`);
    const root = config.root;
    if (root === undefined || root === '') throw new Error("filesystem object store: config key 'root' (a directory) is required");
    if (!path.isAbsolute(root)) throw new Error(`filesystem object store: root ${JSON.stringify(root)} must be an absolute path`);
    await fs.mkdir(root, { recursive: true, mode: 0o700 });
    const st = await fs.stat(root);
    if (!st.isDirectory()) throw new Error(`filesystem object store: root ${root} is not a directory`);
    this.root = await fs.realpath(root);
    log.info('filesystem object store ready', { root: this.root, pid: process.pid });
    if (config.bucket !== undefined && config.bucket !== '') await this.sweep(config.bucket, config.prefix ?? '');
  }

  /**
   * Removes the temp files killed writers left under the location, now and on a schedule; a
   * failure is only logged.
   */
  private async sweep(bucket: string, prefix: string): Promise<void> {
    const report = (removed: string[], err?: Error): void => {
      if (err !== undefined) log.warn('could not sweep temp files left by killed uploads', { bucket, error: err.message });
      else if (removed.length > 0) log.info('removed temp files left by killed uploads', { bucket, count: removed.length, files: removed.slice(0, 10) });
    };
    try {
      const segments = prefix.split('/').filter((p) => p !== '');
      const dir = segments.length > 0 ? path.join(this.bucketDir(bucket), ...keySegments(segments.join('/')).map(diskName)) : this.bucketDir(bucket);
      report(await sweepTempFiles(dir));
      scheduleSweep(dir, report);
    } catch (err) {
      report([], err as Error);
    }
  }

  private bucketDir(bucket: string): string {
    if (this.root === '') throw new Error('filesystem object store: Init was not called');
    checkBucket(bucket);
    return path.join(this.root, bucket);
  }

  private pathOf(bucket: string, key: string): string {
    return path.join(this.bucketDir(bucket), ...keySegments(key).map(diskName));
  }

  /** Makes the key's directories, recording each long segment (the object's own too) before its entry. */
  private async makeDirs(bucket: string, key: string): Promise<void> {
    let dir = this.bucketDir(bucket);
    await fs.mkdir(dir, { recursive: true });
    const segments = keySegments(key);
    for (const [i, seg] of segments.entries()) {
      await this.writeRecord(dir, seg);
      if (i === segments.length - 1) break;
      dir = path.join(dir, diskName(seg));
      await fs.mkdir(dir, { recursive: true });
    }
  }

  /** Records a long segment's whole name beside its entry, before the entry is made (whole or not at all, like an object). */
  private async writeRecord(dir: string, segment: string): Promise<void> {
    const record = longSegmentRecord(segment);
    if (record === undefined) return;
    const tmp = path.join(dir, `${TEMP_PREFIX}${record.name}-${randomBytes(6).toString('hex')}`);
    heldTempFiles.add(tmp);
    try {
      await fs.writeFile(tmp, record.content, { mode: 0o600, flag: 'wx' });
      await fs.rename(tmp, path.join(dir, record.name));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    } finally {
      heldTempFiles.delete(tmp);
    }
  }

  /** The store's own directory stays on the server: errors name it `<store root>`. */
  private async hidingRoot<T>(p: Promise<T>): Promise<T> {
    try {
      return await p;
    } catch (err) {
      if (err instanceof Error && this.root !== '') err.message = err.message.split(this.root).join('<store root>');
      throw err;
    }
  }

  /** Symlinks inside the root must not lead out of it. */
  private async checkInside(p: string): Promise<void> {
    const real = await fs.realpath(p);
    if (real !== this.root && !real.startsWith(this.root + path.sep)) {
      throw new UnsafeKeyError(`path ${p} leads outside the store root ${this.root}`);
    }
  }

  putObject(bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    return this.hidingRoot(this.putObjectAt(bucket, key, body));
  }

  private async putObjectAt(bucket: string, key: string, body: AsyncIterable<Uint8Array>): Promise<void> {
    const target = this.pathOf(bucket, key);
    const dir = path.dirname(target);
    await this.makeDirs(bucket, key);
    await this.checkInside(dir);
    // The name's head only: the temp name must fit where the object's own name just fits.
    const tmp = path.join(dir, `${TEMP_PREFIX}${truncateBytes(path.basename(target), 64)}-${randomBytes(6).toString('hex')}`);
    // Held before it exists, so a sweep never takes a file this process is writing.
    heldTempFiles.add(tmp);
    try {
      const fh = await fs.open(tmp, 'wx', 0o600);
      try {
        for await (const chunk of body) await fh.write(chunk);
        await fh.sync();
        await fh.close();
        await fs.rename(tmp, target);
      } catch (err) {
        await fh.close().catch(() => undefined);
        await fs.rm(tmp, { force: true });
        throw err;
      }
    } finally {
      heldTempFiles.delete(tmp);
    }
  }

  async getObject(bucket: string, key: string): Promise<AsyncIterable<Uint8Array>> {
    return this.getObjectFrom(bucket, key, 0);
  }

  getObjectFrom(bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>> {
    return this.hidingRoot(this.getObjectFromAt(bucket, key, offset));
  }

  private async getObjectFromAt(bucket: string, key: string, offset: number): Promise<AsyncIterable<Uint8Array>> {
    const p = this.pathOf(bucket, key);
    try {
      const st = await fs.stat(p);
      if (!st.isFile()) throw new NotFoundError(`object ${bucket}/${key} not found`);
      await this.checkInside(p);
    } catch (err) {
      if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) throw new NotFoundError(`object ${bucket}/${key} not found`);
      throw err;
    }
    return createReadStream(p, { start: offset, highWaterMark: 1024 * 1024 });
  }

  objectExists(bucket: string, key: string): Promise<boolean> {
    return this.hidingRoot(this.objectExistsAt(bucket, key));
  }

  private async objectExistsAt(bucket: string, key: string): Promise<boolean> {
    const p = this.pathOf(bucket, key);
    try {
      if (!(await fs.stat(p)).isFile()) return false;
      // Like a read: a symlink out of the root must not answer for files outside it.
      await this.checkInside(p);
      return true;
    } catch (err) {
      if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return false;
      throw err;
    }
  }

  /** Every key under `prefix`, walking only the directory the prefix points into. */
  listObjects(bucket: string, prefix: string): Promise<string[]> {
    return this.hidingRoot(this.listObjectsAt(bucket, prefix));
  }

  private async listObjectsAt(bucket: string, prefix: string): Promise<string[]> {
    const base = this.bucketDir(bucket);
    const dirPart = prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/') + 1) : '';
    if (dirPart !== '') keySegments(dirPart.slice(0, -1));
    const keys: string[] = [];
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await fs.readdir(dir, { withFileTypes: true });
      } catch (err) {
        if (isErrno(err, 'ENOENT') || isErrno(err, 'ENOTDIR')) return;
        throw err;
      }
      for (const e of entries) {
        if (e.name.startsWith(TEMP_PREFIX) || e.name.startsWith(LONG_NAME_PREFIX)) continue;
        const key = rel + (await segmentOf(dir, e.name));
        if (e.isDirectory()) {
          if (prefix.startsWith(`${key}/`) || `${key}/`.startsWith(prefix) || key.startsWith(prefix)) await walk(path.join(dir, e.name), `${key}/`);
        } else if (e.isFile() && key.startsWith(prefix)) {
          keys.push(key);
        }
      }
    };
    await walk(path.join(base, ...dirPart.split('/').filter((s) => s !== '').map(diskName)), dirPart);
    return keys.sort();
  }

  async listCommonPrefixes(bucket: string, prefix: string, delimiter: string): Promise<string[]> {
    if (delimiter === '') throw new Error('listCommonPrefixes: the delimiter must not be empty');
    const out = new Set<string>();
    for (const key of await this.listObjects(bucket, prefix)) {
      const rest = key.slice(prefix.length);
      const i = rest.indexOf(delimiter);
      if (i >= 0) out.add(prefix + rest.slice(0, i + delimiter.length));
    }
    return [...out].sort();
  }

  deleteObject(bucket: string, key: string): Promise<void> {
    return this.hidingRoot(this.deleteObjectAt(bucket, key));
  }

  private async deleteObjectAt(bucket: string, key: string): Promise<void> {
    const p = this.pathOf(bucket, key);
    try {
      // The directory is checked, not the file: unlinking a symlink removes the link only, but a
      // symlinked directory on the way would lead the unlink out of the root.
      await this.checkInside(path.dirname(p));
      await fs.unlink(p);
      await forgetLongSegment(path.dirname(p), path.basename(p));
    } catch (err) {
      // A missing object (or a "directory" key) is not an error: S3 deletes are idempotent too.
      if (!isErrno(err, 'ENOENT') && !isErrno(err, 'ENOTDIR') && !isErrno(err, 'EISDIR')) throw err;
    }
    // Drop directories the delete left empty, so listings do not show phantom prefixes.
    const stop = this.bucketDir(bucket);
    for (let dir = path.dirname(p); dir.startsWith(stop + path.sep); dir = path.dirname(dir)) {
      try {
        await fs.rmdir(dir);
        await forgetLongSegment(path.dirname(dir), path.basename(dir));
      } catch {
        break;
      }
    }
  }

  /** A file:// URL: this store has no HTTP endpoint, so the URL works only on the same machine. */
  async createSignedURL(bucket: string, key: string, _ttlSeconds: number): Promise<string> {
    return pathToFileURL(this.pathOf(bucket, key)).href;
  }
}
