// The data keys of a location's backups (spec.encryption): a fresh one, wrapped, for each new
// backup; an existing backup's unwrapped from what it recorded (its stowage-backup.json envelope,
// or status.encryption for a run that never wrote one). The key-encryption keys live in a Secret
// of the server's namespace (the built-in key manager) or behind a KeyManager plugin; either is
// read per use, so a rotated Secret takes effect on the next run without a restart.
import type { Backup, BackupEncryptionStatus, BackupStorageLocation } from '../apis/v1/index.js';
import {
  CHUNKED_ALGORITHM, dataKeyContext, KeyUnavailableError, newDataKey, SECRET_KEY_MANAGER, secretKeyManager, secretKeyProblems,
} from '../encryption/index.js';
import { isNotFound, type KubeObject } from '../kube/index.js';
import type { BackupStore } from '../persistence/backupStore.js';
import { openEnvelope, type ArtifactKey, type WrappedDataKey } from '../persistence/sealing.js';
import type { KeyManager } from '../plugin/api/index.js';
import type { PluginHandle } from '../plugin/host/index.js';
import type { StoreContext } from './context.js';

type Secret = KubeObject & { data?: Record<string, string> };
const SECRETS = { group: '', version: 'v1', resource: 'secrets', namespaced: true } as const;

/** The entries of a Secret of the server's namespace, decoded; `missing()` is thrown when it does not exist. */
export async function secretData(ctx: Pick<StoreContext, 'client' | 'namespace'>, name: string, missing: () => Error): Promise<Record<string, Buffer>> {
  let secret: Secret;
  try {
    secret = await ctx.client.get<Secret>(SECRETS, ctx.namespace, name);
  } catch (err) {
    if (isNotFound(err)) throw missing();
    throw err;
  }
  return Object.fromEntries(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
}

/** Whether backups written to the location are encrypted. */
export function encrypts(bsl: BackupStorageLocation): boolean {
  const e = bsl.spec.encryption;
  return e !== undefined && e !== null && (e.keySecretRef !== undefined || e.keyManager !== undefined);
}

/** The location's key manager and its name (as recorded with each backup); undefined when the location does not encrypt. */
export async function locationKeyManager(ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation): Promise<{ name: string; manager: KeyManager } | undefined> {
  const e = bsl.spec.encryption;
  if (e === undefined || e === null) return undefined;
  if (e.keySecretRef !== undefined) {
    const ref = e.keySecretRef;
    const secretName = `${ctx.namespace}/${ref.name}`;
    const data = await secretData(ctx, ref.name, () => new KeyUnavailableError('unknown-key', `the encryption key Secret ${secretName} of location "${bsl.metadata.name}" does not exist`));
    const keys = { secret: secretName, current: ref.key, data };
    const problems = secretKeyProblems(keys);
    if (problems.length > 0) throw new KeyUnavailableError('unknown-key', `location "${bsl.metadata.name}": ${problems.join('; ')}`);
    return { name: SECRET_KEY_MANAGER, manager: secretKeyManager(keys) };
  }
  if (e.keyManager !== undefined) {
    const { provider, config } = e.keyManager;
    return { name: provider, manager: await handle.keyManager(provider, { ...(config ?? {}) }) };
  }
  return undefined;
}

/** Checks the location's keys can be used now (for its validation): rejects naming what is wrong. */
export async function checkLocationKeys(ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation): Promise<void> {
  const km = await locationKeyManager(ctx, handle, bsl);
  if (km === undefined) return;
  // A wrap and an unwrap of a throwaway key: the whole path a backup and its restore take.
  const probe = newDataKey();
  const context = 'stowage/location-check';
  const wrapped = await km.manager.wrapKey(probe, context);
  const back = await km.manager.unwrapKey(wrapped.keyId, wrapped.ciphertext, context);
  if (!Buffer.from(back).equals(probe)) throw new KeyUnavailableError('key-manager', `key manager ${km.name} did not give back the key it wrapped`);
}

/** A fresh data key for a new backup of the location, wrapped; 'unencrypted' when the location does not encrypt. */
export async function newBackupKey(ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation, backup: string): Promise<ArtifactKey> {
  const km = await locationKeyManager(ctx, handle, bsl);
  if (km === undefined) return 'unencrypted';
  const dataKey = newDataKey();
  const w = await km.manager.wrapKey(dataKey, dataKeyContext(backup));
  return { dataKey, wrapped: { algorithm: CHUNKED_ALGORITHM, keyManager: km.name, keyId: w.keyId, wrappedKey: Buffer.from(w.ciphertext) } };
}

/** status.encryption for a key (null clears it: an unencrypted backup). */
export function encryptionStatus(key: ArtifactKey): BackupEncryptionStatus | null {
  if (key === 'unencrypted') return null;
  const w = key.wrapped;
  return { algorithm: w.algorithm, keyManager: w.keyManager, keyId: w.keyId, wrappedKey: w.wrappedKey.toString('base64') };
}

/** The wrapped key a Backup's status records, or undefined (unencrypted, or recorded without it). */
export function wrappedKeyOfStatus(b: Pick<Backup, 'status'>): WrappedDataKey | undefined {
  const e = b.status?.encryption;
  if (e?.wrappedKey === undefined || e.keyId === undefined || e.keyManager === undefined) return undefined;
  return { algorithm: e.algorithm ?? CHUNKED_ALGORITHM, keyManager: e.keyManager, keyId: e.keyId, wrappedKey: Buffer.from(e.wrappedKey, 'base64') };
}

/**
 * Why an unencrypted backup is not synced or restored from the location (it requires encryption:
 * such a backup may have been planted by whoever can write to the bucket), or undefined.
 */
export function unencryptedRefusal(bsl: BackupStorageLocation, backup: string, key: ArtifactKey): string | undefined {
  if (key !== 'unencrypted' || bsl.spec.encryption?.required !== true) return undefined;
  return `backup "${backup}" is not encrypted, and location "${bsl.metadata.name}" requires encryption (spec.encryption.required)`;
}

/**
 * The key of backup `backup` of the location, from its wrapping (undefined: it is not encrypted).
 * Refuses a key the location's key manager is not the one of, or cannot unwrap, naming why.
 */
export async function openBackupKey(
  ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation, backup: string, wrapped: WrappedDataKey | undefined,
): Promise<ArtifactKey> {
  const where = `location "${bsl.metadata.name}"`;
  if (wrapped === undefined) return 'unencrypted';
  const km = await locationKeyManager(ctx, handle, bsl);
  const needs = `its data key is wrapped with key "${wrapped.keyId}" of ${wrapped.keyManager}`;
  if (km === undefined) throw new KeyUnavailableError('unknown-key', `backup "${backup}" is encrypted (${needs}), and ${where} has no spec.encryption to unwrap it`);
  if (km.name !== wrapped.keyManager) {
    throw new KeyUnavailableError('unknown-key', `backup "${backup}" is encrypted (${needs}), but ${where} uses key manager ${km.name}`);
  }
  try {
    const dataKey = Buffer.from(await km.manager.unwrapKey(wrapped.keyId, wrapped.wrappedKey, dataKeyContext(backup)));
    return { dataKey, wrapped };
  } catch (err) {
    if (err instanceof KeyUnavailableError) throw new KeyUnavailableError(err.reason, `backup "${backup}" cannot be read: ${err.message}`, { cause: err });
    throw err;
  }
}

/**
 * A stored backup as its stowage-backup.json records it, and the store keyed to read the rest of
 * it; undefined when it has no stowage-backup.json.
 */
export async function readStoredBackup(
  ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation, store: BackupStore, backup: string,
): Promise<{ backup: Backup; store: BackupStore; key: ArtifactKey } | undefined> {
  const envelope = await store.getBackupEnvelope(backup);
  if (envelope === undefined) return undefined;
  const key = await openBackupKey(ctx, handle, bsl, backup, envelope.encrypted ? envelope.wrapped : undefined);
  return { backup: await openEnvelope(key, envelope, backup), store: store.withKey(key), key };
}

/**
 * The store keyed for an existing backup: with the wrapped key its status recorded as the run
 * started (sync copies it from stowage-backup.json); for a Backup that records none, the wrapping
 * its stowage-backup.json holds, read only where the location encrypts or the status says the
 * backup is encrypted: anywhere else the backup is plain and nothing is read.
 */
export async function keyedForBackup(
  ctx: StoreContext, handle: PluginHandle, bsl: BackupStorageLocation, store: BackupStore, backup: Pick<Backup, 'metadata' | 'status'>,
): Promise<BackupStore> {
  const name = backup.metadata.name ?? '';
  let wrapped = wrappedKeyOfStatus(backup);
  if (wrapped === undefined && (encrypts(bsl) || backup.status?.encryption !== undefined)) {
    const envelope = await store.getBackupEnvelope(name);
    if (envelope?.encrypted === true) wrapped = envelope.wrapped;
  }
  return store.withKey(await openBackupKey(ctx, handle, bsl, name, wrapped));
}

