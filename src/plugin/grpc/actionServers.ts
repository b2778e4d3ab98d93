// Plugin side of the three item-action services.
import { executeItems, type BackupItemAction, type DeleteItemAction, type ResourceSelector, type RestoreItemAction } from '../api/index.js';
import type {
  BackupItemActionBatchResult,
  BackupItemActionServer,
  DeleteItemActionServer,
  RestoreItemActionServer,
} from '../../gen/stowage/plugin/v1/item_actions.js';
import type { AppliesToRequest, AppliesToResponse } from '../../gen/stowage/plugin/v1/common.js';
import { decodeObject, encodeObject, identifiersToWire, selectorToWire, textOf } from './convert.js';
import { diffItem } from './itemPatch.js';
import { dispenser, unaryHandler, type Factory, type ServeHooks } from './serverCommon.js';

const EMPTY = Buffer.alloc(0);

function appliesTo(
  hooks: ServeHooks,
  service: string,
  get: (name: string) => Promise<{ appliesTo(): Promise<ResourceSelector> }>,
) {
  return unaryHandler<AppliesToRequest, AppliesToResponse>(hooks, service, 'AppliesTo', (r) => r.plugin, async (req) => ({
    selector: selectorToWire(await (await get(req.plugin)).appliesTo()),
  }));
}

export function backupItemActionServer(factories: Record<string, Factory<BackupItemAction>>, hooks: ServeHooks): BackupItemActionServer {
  const service = 'BackupItemAction';
  const get = dispenser('BackupItemAction', factories);
  return {
    appliesTo: appliesTo(hooks, service, get),
    execute: unaryHandler(hooks, service, 'Execute', (r) => r.plugin, async (req) => {
      const action = await get(req.plugin);
      const out = await action.execute({ item: decodeObject(req.item, 'item'), backup: decodeObject(req.backup, 'backup') });
      return { item: encodeObject(out.item), additionalItems: identifiersToWire(out.additionalItems) };
    }),
    executeBatch: unaryHandler(hooks, service, 'ExecuteBatch', (r) => r.plugin, async (req) => {
      const action = await get(req.plugin);
      const backup = decodeObject(req.backup, 'backup');
      const texts = req.items.map(textOf);
      const items = texts.map((text, i) => decodeObject(text, `item ${i}`));
      // A second parse, made before the action runs: the action may change its input in place.
      const sent = req.acceptPatches ? texts.map((text) => JSON.parse(text) as Record<string, unknown>) : undefined;
      const results = await executeItems(action, { items, backup });
      if (results.length !== items.length) throw new Error(`executeBatch returned ${results.length} results for ${items.length} items`);
      return {
        results: results.map((r, i): BackupItemActionBatchResult => {
          if (!r.ok) return { item: EMPTY, itemPatch: EMPTY, additionalItems: [], error: r.error };
          const additionalItems = identifiersToWire(r.output.additionalItems);
          const before = sent?.[i];
          if (before === undefined) return { item: encodeObject(r.output.item), itemPatch: EMPTY, additionalItems, error: '' };
          const out: unknown = r.output.item;
          if (typeof out !== 'object' || out === null || Array.isArray(out)) return { item: EMPTY, itemPatch: EMPTY, additionalItems: [], error: 'the action returned an item that is not an object' };
          return { item: EMPTY, itemPatch: encodeObject(diffItem(before, out as Record<string, unknown>)), additionalItems, error: '' };
        }),
      };
    }),
  };
}

export function restoreItemActionServer(factories: Record<string, Factory<RestoreItemAction>>, hooks: ServeHooks): RestoreItemActionServer {
  const service = 'RestoreItemAction';
  const get = dispenser('RestoreItemAction', factories);
  return {
    appliesTo: appliesTo(hooks, service, get),
    execute: unaryHandler(hooks, service, 'Execute', (r) => r.plugin, async (req) => {
      const action = await get(req.plugin);
      const out = await action.execute({
        item: decodeObject(req.item, 'item'),
        itemFromBackup: decodeObject(req.itemFromBackup, 'itemFromBackup'),
        restore: decodeObject(req.restore, 'restore'),
      });
      return { item: encodeObject(out.item), additionalItems: identifiersToWire(out.additionalItems), skipRestore: out.skipRestore };
    }),
  };
}

export function deleteItemActionServer(factories: Record<string, Factory<DeleteItemAction>>, hooks: ServeHooks): DeleteItemActionServer {
  const service = 'DeleteItemAction';
  const get = dispenser('DeleteItemAction', factories);
  return {
    appliesTo: appliesTo(hooks, service, get),
    execute: unaryHandler(hooks, service, 'Execute', (r) => r.plugin, async (req) => {
      const action = await get(req.plugin);
      await action.execute({ item: decodeObject(req.item, 'item'), backup: decodeObject(req.backup, 'backup') });
      return {};
    }),
  };
}
