// The host's item actions: each call goes through callPlugin(). Actions are stateless, so after a
// restart the new process creates them again on first call (that is their re-dispense).
import { executeEachItem, type BackupItemAction, type BackupItemActionBatchResult, type DeleteItemAction, type KubeObject, type RestoreItemAction } from '../api/index.js';
import {
  actionAppliesTo,
  backupActionExecute,
  backupActionExecuteBatch,
  deleteActionExecute,
  GrpcStatus,
  RemoteCallError,
  restoreActionExecute,
} from '../grpc/index.js';
import { callPlugin, type CallPolicy, type CallSite } from './call.js';

/** A batch call carries at most this much item JSON, well under the 64 MiB message cap. */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;
/** ...and at most this many items, so one slow batch does not hold a run for long. */
export const MAX_BATCH_ITEMS = 256;

/** An action dispensed by a handle, with the plugin name it was registered under. */
export type Named<T> = T & { readonly name: string };

export function remoteBackupItemAction(site: CallSite, policy: CallPolicy): Named<BackupItemAction> {
  const execute: BackupItemAction['execute'] = (input) =>
    callPlugin(site, 'Execute', policy, (live, ctx) => backupActionExecute(live.conn, ctx, site.plugin, input));
  // A plugin built before ExecuteBatch existed answers UNIMPLEMENTED: use Execute from then on.
  let batchUnsupported = false;
  // The Backup is the same object for every call of a run: encode it once.
  let encodedBackup: { of: KubeObject; bytes: Buffer } | undefined;
  return {
    name: site.plugin,
    appliesTo: () => callPlugin(site, 'AppliesTo', policy, (live, ctx) => actionAppliesTo(live.conn, ctx, 'BackupItemAction', site.plugin)),
    execute,
    executeBatch: async ({ items, backup }) => {
      if (!batchUnsupported) {
        if (encodedBackup?.of !== backup) encodedBackup = { of: backup, bytes: Buffer.from(JSON.stringify(backup)) };
        const bytes = encodedBackup.bytes;
        const out: BackupItemActionBatchResult[] = [];
        try {
          const encoded = items.map((i) => Buffer.from(JSON.stringify(i)));
          for (const [from, to] of byteBatches(encoded)) {
            const group = { items: items.slice(from, to), encoded: encoded.slice(from, to), backup: bytes };
            const results = await callPlugin(site, 'ExecuteBatch', policy, (live, ctx) => backupActionExecuteBatch(live.conn, ctx, site.plugin, group));
            out.push(...results);
          }
          return out;
        } catch (err) {
          if (!isUnimplemented(err) || out.length > 0) throw err;
          batchUnsupported = true;
        }
      }
      return executeEachItem(execute, items, backup);
    },
  };
}

/** Splits encoded items into runs [from, to) within MAX_BATCH_BYTES and MAX_BATCH_ITEMS (an oversized item goes alone). */
export function byteBatches(encoded: readonly Buffer[]): [from: number, to: number][] {
  const groups: [number, number][] = [];
  let from = 0;
  let size = 0;
  encoded.forEach((e, i) => {
    if (i > from && (size + e.byteLength > MAX_BATCH_BYTES || i - from >= MAX_BATCH_ITEMS)) {
      groups.push([from, i]);
      from = i;
      size = 0;
    }
    size += e.byteLength;
  });
  if (encoded.length > from) groups.push([from, encoded.length]);
  return groups;
}

function isUnimplemented(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof RemoteCallError) return e.grpcCode === GrpcStatus.UNIMPLEMENTED && !e.fromPlugin;
  }
  return false;
}

export function remoteRestoreItemAction(site: CallSite, policy: CallPolicy): Named<RestoreItemAction> {
  return {
    name: site.plugin,
    appliesTo: () => callPlugin(site, 'AppliesTo', policy, (live, ctx) => actionAppliesTo(live.conn, ctx, 'RestoreItemAction', site.plugin)),
    execute: (input) => callPlugin(site, 'Execute', policy, (live, ctx) => restoreActionExecute(live.conn, ctx, site.plugin, input)),
  };
}

export function remoteDeleteItemAction(site: CallSite, policy: CallPolicy): Named<DeleteItemAction> {
  return {
    name: site.plugin,
    appliesTo: () => callPlugin(site, 'AppliesTo', policy, (live, ctx) => actionAppliesTo(live.conn, ctx, 'DeleteItemAction', site.plugin)),
    execute: (input) => callPlugin(site, 'Execute', policy, (live, ctx) => deleteActionExecute(live.conn, ctx, site.plugin, input)),
  };
}
