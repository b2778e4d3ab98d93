// Signed manifests (a location's spec.signing): the key a new backup is signed with, and the
// check of a stored backup's signature that backup sync, restores and downloads make. The keys
// live in a Secret of the server's namespace (src/signing/keys.ts for its forms), read per use so
// a rotated Secret takes effect at once. An HMAC key never leaves the server: only the signature
// (and the key's entry name) is stored.
import {
  LABEL_SCHEDULE_NAME, labelValue, type Backup, type BackupSignatureStatus, type BackupStorageLocation,
} from '../apis/v1/index.js';
import type { BackupStore } from '../persistence/backupStore.js';
import {
  canSign, currentSigningKey, probeSigningKey, SignatureError, signingKeyProblems, signStatement, verifySignatureFile,
  type SignatureFile, type SignedStatement, type SigningKey, type SigningKeys,
} from '../signing/index.js';
import { secretData } from './keys.js';
import type { StoreContext } from './context.js';

/** Whether the location signs its backups (and so verifies every backup it syncs or restores). */
export function signs(bsl: BackupStorageLocation): boolean {
  return bsl.spec.signing?.keySecretRef !== undefined;
}

/** The location's signing keys as its Secret holds them now; undefined when it does not sign. Rejects naming what is wrong. */
export async function locationSigningKeys(ctx: Pick<StoreContext, 'client' | 'namespace'>, bsl: BackupStorageLocation): Promise<SigningKeys | undefined> {
  const ref = bsl.spec.signing?.keySecretRef;
  if (ref === undefined) return undefined;
  const secret = `${ctx.namespace}/${ref.name}`;
  const data = await secretData(ctx, ref.name, () => new SignatureError('unknown-key', `the signing key Secret ${secret} of location "${bsl.metadata.name}" does not exist`));
  const keys = { secret, current: ref.key, data };
  const problems = signingKeyProblems(keys);
  if (problems.length > 0) throw new SignatureError('unknown-key', `location "${bsl.metadata.name}": ${problems.join('; ')}`);
  return keys;
}

/** Checks the location's signing keys can be used now (its validation). */
export async function checkLocationSigning(ctx: StoreContext, bsl: BackupStorageLocation): Promise<void> {
  const keys = await locationSigningKeys(ctx, bsl);
  if (keys === undefined) return;
  const key = currentSigningKey(keys);
  if (key !== undefined) probeSigningKey(keys, key);
}

/** Why no backup can be written to the location: its signing key is an Ed25519 public key alone. */
export function verifyOnlyReason(bsl: BackupStorageLocation, key: SigningKey): string {
  return `backup storage location "${bsl.metadata.name}" holds only the Ed25519 public key "${key.id}" (Secret entry "${key.entry}"): ` +
    'it verifies and restores backups signed elsewhere but cannot sign new ones, so backups cannot be written to it';
}

/** The key new backups of the location are signed with (undefined: it does not sign); rejects for a verify-only location. */
export async function backupSigningKey(ctx: StoreContext, bsl: BackupStorageLocation): Promise<SigningKey | undefined> {
  const keys = await locationSigningKeys(ctx, bsl);
  if (keys === undefined) return undefined;
  const key = currentSigningKey(keys);
  if (key === undefined) throw new SignatureError('unknown-key', `location "${bsl.metadata.name}" has no usable signing key "${keys.current}"`);
  if (!canSign(key)) throw new SignatureError('no-private-key', verifyOnlyReason(bsl, key));
  return key;
}

/** Why backups cannot be written to the location for its signing keys, or undefined (the backup's validation). */
export async function signingValidation(ctx: StoreContext, bsl: BackupStorageLocation): Promise<string | undefined> {
  try {
    await backupSigningKey(ctx, bsl);
    return undefined;
  } catch (err) {
    if (err instanceof SignatureError) return err.message;
    throw err;
  }
}

export function signatureStatus(key: Pick<SigningKey, 'algorithm' | 'id'>): BackupSignatureStatus {
  return { algorithm: key.algorithm, keyId: key.id };
}

/** The signing callback of a backup's completion: the statement, its digests filled in by the store. */
export function backupSigner(key: SigningKey, statement: Omit<SignedStatement, 'manifestSha256' | 'resourceListSha256'>) {
  return (digests: { manifestSha256: string; resourceListSha256: string }): SignatureFile => signStatement(key, { ...statement, ...digests });
}

export interface VerifiedSignature {
  statement: SignedStatement;
  status: BackupSignatureStatus;
}

/**
 * Verifies a stored backup's signature with the location's keys, and that the manifest and the
 * resource list stored are the ones it covers (`store` keyed to read the backup). Undefined when
 * the location does not sign; rejects with a SignatureError saying precisely why otherwise.
 */
export async function verifyStoredSignature(
  ctx: Pick<StoreContext, 'client' | 'namespace'>, bsl: BackupStorageLocation, store: BackupStore, backup: string,
): Promise<VerifiedSignature | undefined> {
  const keys = await locationSigningKeys(ctx, bsl);
  if (keys === undefined) return undefined;
  const where = `location "${bsl.metadata.name}" signs its backups (spec.signing)`;
  const file = await store.getSignature(backup);
  if (file === undefined) {
    throw new SignatureError('missing', `backup "${backup}" has no signature (${store.keys(backup).signature} is missing), and ${where}: it was not made here or with this key, or was planted by someone who can write to the bucket`);
  }
  const what = `the signature of backup "${backup}"`;
  const key = verifySignatureFile(keys, file, what);
  const s = file.statement;
  if (s.backup !== backup) throw new SignatureError('mismatch', `${what} was made for backup "${s.backup}", not "${backup}"`);
  const digest = async (artifact: 'manifest' | 'resource-list', signed: string): Promise<void> => {
    const words = artifact === 'manifest' ? 'manifest' : 'resource list';
    const got = await store.artifactSha256(backup, artifact);
    if (got === undefined) throw new SignatureError('missing', `backup "${backup}" has no ${words} (it was deleted), and ${where}: the backup cannot be verified`);
    if (got !== signed) throw new SignatureError('mismatch', `the ${words} of backup "${backup}" is not the one signed: its SHA-256 is ${got}, the signature says ${signed} (it was replaced after the backup was made)`);
  };
  await digest('manifest', s.manifestSha256);
  await digest('resource-list', s.resourceListSha256);
  return { statement: s, status: signatureStatus(key) };
}

const sameLabels = (a: Record<string, string>, b: Record<string, string>): boolean => {
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && a[k] === b[k]);
};

/** Where a stowage-backup.json departs from what the signature covers (phase, start, labels, location), or undefined. */
export function statementMismatch(s: SignedStatement, stored: Backup): string | undefined {
  const differs = (field: string, stored: string, signed: string): string =>
    `its stowage-backup.json says ${field} ${JSON.stringify(stored)}, the signature ${JSON.stringify(signed)}: it was altered after the backup was made`;
  if ((stored.status?.phase ?? '') !== s.phase) return differs('phase', stored.status?.phase ?? '', s.phase);
  if ((stored.status?.startTimestamp ?? '') !== s.startTimestamp) return differs('startTimestamp', stored.status?.startTimestamp ?? '', s.startTimestamp);
  if ((stored.spec.storageLocation ?? '') !== s.location) return differs('location', stored.spec.storageLocation ?? '', s.location);
  if (!sameLabels(stored.metadata.labels ?? {}, s.labels)) return `its stowage-backup.json's labels are not the ones signed: it was altered after the backup was made`;
  return undefined;
}

/** Why a verified backup is not the one a restore from `schedule` may read (its signed schedule label differs), or undefined. */
export function scheduleMismatch(s: SignedStatement, backup: string, schedule: string | undefined): string | undefined {
  if (schedule === undefined || schedule === '') return undefined;
  const signed = s.labels[LABEL_SCHEDULE_NAME];
  if (signed === labelValue(schedule)) return undefined;
  return `backup "${backup}" is not signed as a backup of schedule "${schedule}" (its signed ${LABEL_SCHEDULE_NAME} label is ${signed === undefined ? 'absent' : JSON.stringify(signed)})`;
}

/**
 * Whether a Backup's labels can steer a selection (a restore from a schedule): a backup synced from
 * a signing location is trusted only if sync verified its signature (it records status.signature
 * then, and only then); one made in this cluster carries the labels this cluster gave it.
 */
export function labelsTrusted(b: Backup, syncedFrom: string | undefined, location: BackupStorageLocation | undefined): boolean {
  if (syncedFrom === undefined) return true;
  if (location === undefined || !signs(location)) return true;
  return b.status?.signature?.keyId !== undefined;
}
