// The host's item actions: each call goes through callPlugin(). Actions are stateless, so after a
// restart the new process creates them again on first call (that is their re-dispense).
import type { BackupItemAction, DeleteItemAction, RestoreItemAction } from '../api/index.js';
import { actionAppliesTo, backupActionExecute, deleteActionExecute, restoreActionExecute } from '../grpc/index.js';
import { callPlugin, type CallPolicy, type CallSite } from './call.js';

/** An action dispensed by a handle, with the plugin name it was registered under. */
export type Named<T> = T & { readonly name: string };

export function remoteBackupItemAction(site: CallSite, policy: CallPolicy): Named<BackupItemAction> {
  return {
    name: site.plugin,
    appliesTo: () => callPlugin(site, 'AppliesTo', policy, (live, ctx) => actionAppliesTo(live.conn, ctx, 'BackupItemAction', site.plugin)),
    execute: (input) => callPlugin(site, 'Execute', policy, (live, ctx) => backupActionExecute(live.conn, ctx, site.plugin, input)),
  };
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
