// How a BackupStore seals what it writes for one backup: with the backup's data key (chunked
// AES-256-GCM, one context per artifact) or not at all. And stowage-backup.json's envelope for an
// encrypted backup: the wrapped data key in the clear (so sync and restore can find it before they
// hold the key), the Backup object sealed.
//   { "kind": "EncryptedBackup", "name": "<b>", "algorithm": "AES-256-GCM-CHUNKED-v1",
//     "keyManager": "stowage.dev/secret", "keyId": "k1", "wrappedKey": "<base64>",
//     "backup": "<base64 of the Backup's JSON, sealed with the 'metadata' context>" }
import type { Backup, StoredDownloadTargetKind } from '../apis/v1/index.js';
import {
  backupArtifactContext, CHUNKED_ALGORITHM, decryptBuffer, decryptStream, encryptBuffer, encryptStream, restoreArtifactContext,
  type BackupArtifact, type RestoreArtifact,
} from '../encryption/index.js';
import { isReplayable, replayableBody } from '../plugin/api/index.js';
import { parseJson } from './codec.js';

/** How a backup's data key is wrapped: what its envelope records, and all that unwrapping it needs. */
export interface WrappedDataKey {
  algorithm: string;
  /** 'stowage.dev/secret' or the KeyManager plugin's name. */
  keyManager: string;
  keyId: string;
  wrappedKey: Buffer;
}

/** A backup's data key (32 bytes) with its wrapping. */
export interface BackupKey {
  dataKey: Buffer;
  wrapped: WrappedDataKey;
}

/** What a store seals a backup's (and its restores') artifacts with. */
export type ArtifactKey = BackupKey | 'unencrypted';

/** stowage-backup.json as read without a key. */
export type BackupEnvelope =
  | { encrypted: false; backup: Backup }
  | { encrypted: true; wrapped: WrappedDataKey; sealedBackup: Buffer };

const ENVELOPE_KIND = 'EncryptedBackup';

/** Which artifact of which run: the context its bytes are bound to, and its name in messages. */
export type ArtifactRef =
  | { backup: string; artifact: BackupArtifact }
  | { restore: string; artifact: RestoreArtifact };

function contextOf(ref: ArtifactRef): string {
  return 'backup' in ref ? backupArtifactContext(ref.backup, ref.artifact) : restoreArtifactContext(ref.restore, ref.artifact);
}

const ARTIFACT_WORDS: Record<BackupArtifact | RestoreArtifact, string> = {
  tarball: 'the tarball', log: 'the log', 'resource-list': 'the resource list', results: 'the results', manifest: 'the manifest', metadata: 'stowage-backup.json', signature: 'the signature',
};

/** The artifact a DownloadRequest target kind names. */
export function downloadArtifact(kind: StoredDownloadTargetKind, name: string): ArtifactRef {
  switch (kind) {
    case 'BackupContents': return { backup: name, artifact: 'tarball' };
    case 'BackupLog': return { backup: name, artifact: 'log' };
    case 'BackupResourceList': return { backup: name, artifact: 'resource-list' };
    case 'BackupResults': return { backup: name, artifact: 'results' };
    case 'BackupManifest': return { backup: name, artifact: 'manifest' };
    case 'RestoreLog': return { restore: name, artifact: 'log' };
    case 'RestoreResults': return { restore: name, artifact: 'results' };
    case 'RestoreResourceList': return { restore: name, artifact: 'resource-list' };
  }
}

export function describeArtifact(ref: ArtifactRef): string {
  return `${ARTIFACT_WORDS[ref.artifact]} of ${'backup' in ref ? `backup "${ref.backup}"` : `restore "${ref.restore}"`}`;
}

/**
 * The body as stored: encrypted as it is read, when there is a key. A replayable body stays
 * replayable (each replay encrypts afresh, with a new salt: the upload replaces the whole object).
 */
export function sealBody(key: ArtifactKey, ref: ArtifactRef, body: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  if (key === 'unencrypted') return body;
  const context = contextOf(ref);
  if (isReplayable(body)) return replayableBody(() => encryptStream(body, key.dataKey, context));
  return encryptStream(body, key.dataKey, context);
}

/**
 * The stored bytes opened: decrypted and authenticated as they are read, when there is a key. A
 * DecryptionError names the artifact and the chunk.
 */
export function openBody(key: ArtifactKey, ref: ArtifactRef, stored: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array> {
  if (key === 'unencrypted') return stored;
  return decryptStream(stored, key.dataKey, contextOf(ref), { what: describeArtifact(ref) });
}

/** stowage-backup.json's bytes for `backup`: the Backup as it is, or its envelope. */
export async function marker(key: ArtifactKey, name: string, backup: Backup): Promise<Buffer> {
  const json = Buffer.from(`${JSON.stringify(backup, null, 2)}\n`);
  if (key === 'unencrypted') return json;
  const sealed = await encryptBuffer(json, key.dataKey, backupArtifactContext(name, 'metadata'));
  const w = key.wrapped;
  const envelope = {
    kind: ENVELOPE_KIND, name, algorithm: w.algorithm, keyManager: w.keyManager, keyId: w.keyId,
    wrappedKey: w.wrappedKey.toString('base64'), backup: sealed.toString('base64'),
  };
  return Buffer.from(`${JSON.stringify(envelope, null, 2)}\n`);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Reads stowage-backup.json's parsed JSON as a Backup or an envelope; throws naming what is wrong. */
export function parseEnvelope(value: unknown, name: string): BackupEnvelope {
  const v = value as Record<string, unknown> | null;
  const file = `stowage-backup.json of backup "${name}"`;
  if (v !== null && typeof v === 'object' && v.kind === ENVELOPE_KIND) {
    const text = (field: string): string => {
      const f = v[field];
      if (typeof f !== 'string' || f === '') throw new Error(`${file} is an encrypted envelope without a valid "${field}"`);
      return f;
    };
    const b64 = (field: string): Buffer => {
      const f = text(field);
      if (!BASE64.test(f)) throw new Error(`${file} is an encrypted envelope whose "${field}" is not base64`);
      return Buffer.from(f, 'base64');
    };
    if (v.name !== name) throw new Error(`${file} is the envelope of backup ${JSON.stringify(v.name)}, not of "${name}"`);
    const algorithm = text('algorithm');
    if (algorithm !== CHUNKED_ALGORITHM) throw new Error(`${file} is encrypted with ${JSON.stringify(algorithm)}, which this server cannot read (it reads ${CHUNKED_ALGORITHM})`);
    return { encrypted: true, wrapped: { algorithm, keyManager: text('keyManager'), keyId: text('keyId'), wrappedKey: b64('wrappedKey') }, sealedBackup: b64('backup') };
  }
  const b = v as Partial<Backup> | null;
  if (b === null || typeof b !== 'object' || b.kind !== 'Backup' || typeof b.metadata?.name !== 'string') {
    throw new Error(`${file} is not a Backup object`);
  }
  return { encrypted: false, backup: b as Backup };
}

/**
 * The Backup inside an envelope. An unencrypted envelope needs no key; an encrypted one needs the
 * backup's, and fails naming why without it.
 */
export async function openEnvelope(key: ArtifactKey, envelope: BackupEnvelope, name: string): Promise<Backup> {
  if (!envelope.encrypted) return envelope.backup;
  if (key === 'unencrypted') {
    throw new Error(`backup "${name}" is encrypted (key "${envelope.wrapped.keyId}" of ${envelope.wrapped.keyManager}): its data key is needed to read stowage-backup.json`);
  }
  const json = await decryptBuffer(envelope.sealedBackup, key.dataKey, backupArtifactContext(name, 'metadata'), { what: `stowage-backup.json of backup "${name}"` });
  const parsed = parseEnvelope(parseJson(json, `stowage-backup.json of backup "${name}"`), name);
  if (parsed.encrypted) throw new Error(`stowage-backup.json of backup "${name}" holds an envelope inside its envelope`);
  return parsed.backup;
}
