// Shared helpers of the restore integration tests: a real apiserver client, a real S3 bucket as a
// BackupStore, backups made with runBackup, and restores run with runRestore.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { expect, inject } from 'vitest';
import winston from 'winston';
import { LABEL_BACKUP_NAME, LABEL_RESTORE_NAME, newBackup, newRestore, type Backup, type BackupSpec, type RestoreSpec } from '../../src/apis/v1/index.js';
import { runBackup } from '../../src/backup/index.js';
import { CORE, createDynamicClient, isNotFound, loadKubeConfig, type DynamicClient, type KubeObject, type ResourceRef } from '../../src/kube/index.js';
import { createBackupStore, type BackupStore } from '../../src/persistence/backupStore.js';
import { newRestoreRequest, runRestore, STRIPPED_METADATA, type RestoreDeps, type RestoreResult } from '../../src/restore/index.js';
import { uniqueName, waitUntil } from '../support/kube.js';
import { testS3, type TestS3 } from '../support/s3ObjectStore.js';

export const RBAC = 'rbac.authorization.k8s.io';
export const res = (group: string, version: string, resource: string, namespaced: boolean): ResourceRef => ({ group, version, resource, namespaced });
export const DEPLOYMENTS = res('apps', 'v1', 'deployments', true);
export const REPLICA_SETS = res('apps', 'v1', 'replicasets', true);
export const ROLES = res(RBAC, 'v1', 'roles', true);
export const ROLE_BINDINGS = res(RBAC, 'v1', 'rolebindings', true);
export const RESOURCE_QUOTAS = res('', 'v1', 'resourcequotas', true);

export interface CapturedLog {
  log: winston.Logger;
  lines: string[];
}

/** A JSON-lines winston logger whose lines are kept, standing in for the run log. */
export function capturingLogger(): CapturedLog {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (c: Buffer) => lines.push(...c.toString('utf8').split('\n').filter((l) => l !== '')));
  const log = winston.createLogger({ level: 'debug', format: winston.format.json(), transports: [new winston.transports.Stream({ stream })] });
  return { log, lines };
}

export interface Env {
  client: DynamicClient;
  s3: TestS3;
  store: BackupStore;
  close(): void;
}

export async function setupEnv(prefix: string, clientOpts: { qps: number; burst: number } = { qps: 200, burst: 400 }): Promise<Env> {
  const client = createDynamicClient(loadKubeConfig(inject('cluster').kubeconfigPath), clientOpts);
  const s3 = testS3();
  const bucket = await s3.createBucket(uniqueName(prefix));
  const store = createBackupStore({ objectStore: s3.store, bucket, prefix: 'restore-tests' });
  return {
    client,
    s3,
    store,
    close: () => {
      client.close();
      s3.close();
    },
  };
}

/** Runs a real backup and stores it whole (tarball, manifest, metadata), as the controller would. */
export async function backupNow(env: Env, name: string, spec: BackupSpec): Promise<Backup> {
  const backup = newBackup(name, 'stowage', spec);
  const { log } = capturingLogger();
  const result = await runBackup({ client: env.client, store: env.store, log }, backup);
  expect(result.failureReason).toBeUndefined();
  expect(result.phase).toBe('Completed');
  const done: Backup = { ...backup, status: { phase: 'Completed', formatVersion: result.formatVersion } };
  await env.store.completeBackup(name, {
    resourceList: result.resourceList,
    results: result.results,
    ...(result.manifest !== undefined ? { manifest: result.manifest } : {}),
    backup: done,
  });
  return done;
}

export interface RestoreRun {
  result: RestoreResult;
  lines: string[];
  progress: { totalItems: number; itemsRestored: number }[];
}

export async function restoreNow(
  env: Env,
  backup: Backup,
  spec: Omit<RestoreSpec, 'backupName'>,
  deps: Partial<Omit<RestoreDeps, 'client' | 'source' | 'log'>> = {},
  name = uniqueName('r'),
  /** Given the run's log lines as they are written, for a test that waits on one mid-run. */
  watchLines?: (lines: readonly string[]) => void,
): Promise<RestoreRun> {
  const restore = newRestore(name, 'stowage', { backupName: backup.metadata.name, ...spec });
  const { log, lines } = capturingLogger();
  watchLines?.(lines);
  const progress: { totalItems: number; itemsRestored: number }[] = [];
  const spillDir = await mkdtemp(join(tmpdir(), 'stowage-spill-'));
  try {
    const result = await runRestore(
      { client: env.client, source: env.store, log, onProgress: (p) => progress.push(p), spillDir, ...deps },
      newRestoreRequest(restore, backup),
    );
    // Every restore, whatever its outcome, leaves its spill directory empty.
    if (deps.spillDir === undefined) expect(await readdir(spillDir)).toEqual([]);
    return { result, lines, progress };
  } finally {
    await rm(spillDir, { recursive: true, force: true });
  }
}

export async function createNs(client: DynamicClient, name: string, labels?: Record<string, string>): Promise<void> {
  await client.create(CORE.namespaces, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...(labels ? { labels } : {}) } });
}

/** Deletes a namespace and waits until the controller-manager has finalised it and it is gone. */
export async function deleteNsAndWait(client: DynamicClient, name: string, timeoutMs = 90_000): Promise<void> {
  await client.delete(CORE.namespaces, undefined, name).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await waitUntil(`namespace ${name} to be gone`, async () => {
    try {
      await client.get(CORE.namespaces, undefined, name);
      return undefined;
    } catch (err) {
      if (isNotFound(err)) return true;
      throw err;
    }
  }, timeoutMs, 500);
}

export async function getOrUndefined(client: DynamicClient, ref: ResourceRef, ns: string | undefined, name: string): Promise<KubeObject | undefined> {
  try {
    return await client.get(ref, ns, name);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * An object as a restore would reproduce it: without the stripped metadata, status, the restore
 * labels, and the fields named in `ignore` (dotted paths the target cluster assigns).
 */
export function comparable(obj: KubeObject, ignore: readonly string[] = []): KubeObject {
  const o = structuredClone(obj);
  const md = (o.metadata ??= {});
  for (const k of STRIPPED_METADATA) delete md[k];
  delete o.status;
  if (md.labels !== undefined) {
    delete md.labels[LABEL_BACKUP_NAME];
    delete md.labels[LABEL_RESTORE_NAME];
    if (Object.keys(md.labels).length === 0) delete md.labels;
  }
  for (const path of ignore) {
    const parts = path.split('.');
    let at: Record<string, unknown> | undefined = o;
    for (const p of parts.slice(0, -1)) {
      const next: unknown = at?.[p];
      at = next !== null && typeof next === 'object' ? (next as Record<string, unknown>) : undefined;
    }
    if (at !== undefined) delete at[parts[parts.length - 1] ?? ''];
  }
  return o;
}

/** The outcomes as comparable rows: `action groupResource ns/name`. */
export function outcomeRows(r: RestoreResult): string[] {
  return r.outcomes.map((o) => `${o.action} ${o.groupResource} ${o.namespace}/${o.name}`).sort();
}
