// Host side of the item-action services: AppliesTo and Execute for each kind of action.
import type { BackupItemActionBatchResult, KubeObject, ResourceIdentifier, ResourceSelector } from '../api/index.js';
import type { PluginConnection } from './connection.js';
import { decodeObject, encodeObject, identifiersFromWire, selectorFromWire, textOf } from './convert.js';
import { unary, type CallContext } from './unary.js';
import { applyItemPatch } from './itemPatch.js';
import { jsonSyntaxProblem } from '../../util/errors.js';

export type ActionKind = 'BackupItemAction' | 'RestoreItemAction' | 'DeleteItemAction';

function clientFor(conn: PluginConnection, kind: ActionKind) {
  switch (kind) {
    case 'BackupItemAction':
      return conn.backupItemAction;
    case 'RestoreItemAction':
      return conn.restoreItemAction;
    case 'DeleteItemAction':
      return conn.deleteItemAction;
  }
}

export async function actionAppliesTo(conn: PluginConnection, ctx: CallContext, kind: ActionKind, plugin: string): Promise<ResourceSelector> {
  const c = clientFor(conn, kind);
  const res = await unary(c.appliesTo.bind(c), { plugin }, ctx);
  return selectorFromWire(res.selector);
}

export async function backupActionExecute(
  conn: PluginConnection,
  ctx: CallContext,
  plugin: string,
  input: { item: KubeObject; backup: KubeObject },
): Promise<{ item: KubeObject; additionalItems: ResourceIdentifier[] }> {
  const c = conn.backupItemAction;
  const req = { plugin, item: encodeObject(input.item), backup: encodeObject(input.backup) };
  const res = await unary(c.execute.bind(c), req, ctx);
  return { item: decodeObject(res.item, `item returned by ${plugin}`), additionalItems: identifiersFromWire(res.additionalItems) };
}

/**
 * Several items in one call: `encoded[i]` is the JSON of `items[i]`. `backup` is passed already
 * encoded: it is the same for every call of a run, and encoding it once saves a JSON.stringify of
 * the whole Backup per call. The plugin may answer an item with a patch (itemPatch.ts), applied
 * here to the item as sent.
 */
export async function backupActionExecuteBatch(
  conn: PluginConnection,
  ctx: CallContext,
  plugin: string,
  input: { items: readonly KubeObject[]; encoded: readonly Buffer[]; backup: Buffer },
): Promise<BackupItemActionBatchResult[]> {
  const c = conn.backupItemAction;
  const res = await unary(c.executeBatch.bind(c), { plugin, items: [...input.encoded], backup: input.backup, acceptPatches: true }, ctx);
  if (res.results.length !== input.items.length) {
    throw new Error(`${plugin} answered ExecuteBatch with ${res.results.length} results for ${input.items.length} items`);
  }
  return res.results.map((r, i): BackupItemActionBatchResult => {
    if (r.error !== '') return { ok: false, error: r.error };
    const what = `item ${i} returned by ${plugin}`;
    try {
      const sent = input.items[i] as KubeObject;
      const item = r.itemPatch.length > 0 ? patchedItem(sent, r.itemPatch, what) : decodeObject(r.item, what);
      return { ok: true, output: { item, additionalItems: identifiersFromWire(r.additionalItems) } };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  });
}

function patchedItem(sent: KubeObject, patch: Uint8Array, what: string): KubeObject {
  let ops: unknown;
  try {
    ops = JSON.parse(textOf(patch));
  } catch (err) {
    throw new Error(`${what}: its patch is not valid JSON: ${jsonSyntaxProblem(err)}`);
  }
  let item: KubeObject;
  try {
    item = applyItemPatch(sent, ops);
  } catch (err) {
    throw new Error(`${what}: its patch does not apply: ${(err as Error).message}`);
  }
  const meta: unknown = item.metadata;
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) throw new Error(`${what} has no metadata`);
  return item;
}

export async function restoreActionExecute(
  conn: PluginConnection,
  ctx: CallContext,
  plugin: string,
  input: { item: KubeObject; itemFromBackup: KubeObject; restore: KubeObject },
): Promise<{ item: KubeObject; additionalItems: ResourceIdentifier[]; skipRestore: boolean }> {
  const c = conn.restoreItemAction;
  const req = {
    plugin,
    item: encodeObject(input.item),
    itemFromBackup: encodeObject(input.itemFromBackup),
    restore: encodeObject(input.restore),
  };
  const res = await unary(c.execute.bind(c), req, ctx);
  return {
    item: decodeObject(res.item, `item returned by ${plugin}`),
    additionalItems: identifiersFromWire(res.additionalItems),
    skipRestore: res.skipRestore,
  };
}

export async function deleteActionExecute(
  conn: PluginConnection,
  ctx: CallContext,
  plugin: string,
  input: { item: KubeObject; backup: KubeObject },
): Promise<void> {
  const c = conn.deleteItemAction;
  await unary(c.execute.bind(c), { plugin, item: encodeObject(input.item), backup: encodeObject(input.backup) }, ctx);
}
