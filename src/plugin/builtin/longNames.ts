// Key segments longer than a file name may be (NAME_MAX, 255 bytes on every common file system)
// are stored under a shorter, deterministic name: a readable head, a marker and a hash of the whole
// segment. The whole segment is recorded beside it in a small file named by that hash, so a
// listing returns the original key. Kubernetes names reach 253 characters and the store's keys add
// suffixes to them (`<name>-resource-list.json.gz`), so these segments do occur.
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/** The longest file name the store writes (NAME_MAX on Linux, macOS and Windows file systems). */
export const NAME_MAX_BYTES = 255;
/** Prefix of the files recording a long segment; keys may not use it, and listings skip it. */
export const LONG_NAME_PREFIX = '.stowage-long-';
const MARK = '~long-';
const HEAD_BYTES = 160;
const MAPPED_RE = /~long-([0-9a-f]{40})$/;

const hashOf = (segment: string): string => createHash('sha256').update(segment).digest('hex').slice(0, 40);

/** The first `max` bytes of `s`, cut at a character boundary. */
export function truncateBytes(s: string, max: number): string {
  if (Buffer.byteLength(s) <= max) return s;
  let out = '';
  let n = 0;
  for (const c of s) {
    const b = Buffer.byteLength(c);
    if (n + b > max) break;
    out += c;
    n += b;
  }
  return out;
}

/** The on-disk name of one key segment: itself when it fits, else head + marker + hash. */
export function diskName(segment: string): string {
  if (Buffer.byteLength(segment) <= NAME_MAX_BYTES) return segment;
  return `${truncateBytes(segment, HEAD_BYTES)}${MARK}${hashOf(segment)}`;
}

/** The file in the same directory that records the whole segment of a mapped name. */
function recordName(mapped: string): string | undefined {
  const m = MAPPED_RE.exec(mapped);
  return m === null ? undefined : `${LONG_NAME_PREFIX}${m[1]}`;
}

/** The record a long segment needs beside its entry (file name and content), or undefined when it fits. */
export function longSegmentRecord(segment: string): { name: string; content: string } | undefined {
  const mapped = diskName(segment);
  const name = recordName(mapped);
  return mapped === segment || name === undefined ? undefined : { name, content: segment };
}

/**
 * The key segment an on-disk entry stands for: the recorded whole segment for a mapped name (when
 * its record matches it), else the name itself.
 */
export async function segmentOf(dir: string, name: string): Promise<string> {
  const record = recordName(name);
  if (record === undefined) return name;
  try {
    const whole = await fs.readFile(path.join(dir, record), 'utf8');
    return diskName(whole) === name ? whole : name;
  } catch {
    return name;
  }
}

/** Removes the record of a mapped name whose entry is gone. */
export async function forgetLongSegment(dir: string, name: string): Promise<void> {
  const record = recordName(name);
  if (record !== undefined) await fs.rm(path.join(dir, record), { force: true });
}
