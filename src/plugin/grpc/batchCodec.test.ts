// The ExecuteBatch fast path writes exactly the bytes of the generated (ts-proto) encoders, which a
// plugin built on another SDK version (or in another language) decodes; and they decode back.
import { describe, expect, it } from 'vitest';
import {
  BackupItemActionExecuteBatchRequest,
  BackupItemActionExecuteBatchResponse,
  type BackupItemActionBatchResult,
} from '../../gen/stowage/plugin/v1/item_actions.js';
import { FastBackupItemActionService, serializeBatchRequest, serializeBatchResponse } from './batchCodec.js';

const json = (o: unknown): Buffer => Buffer.from(JSON.stringify(o));
/** Items whose lengths need one, two and three varint bytes, an empty one, and one with multi-byte characters. */
const ITEMS = [
  json({ metadata: { name: 'a' } }),
  json({ metadata: { name: 'b' }, data: { x: 'y'.repeat(300) } }),
  json({ metadata: { name: 'c' }, data: { x: 'z'.repeat(20_000) } }),
  Buffer.alloc(0),
  json({ metadata: { name: 'ü-ñ' }, data: { note: 'Grüße, 日本' } }),
];
const generatedRequest = (v: BackupItemActionExecuteBatchRequest): Buffer => Buffer.from(BackupItemActionExecuteBatchRequest.encode(v).finish());
const generatedResponse = (v: BackupItemActionExecuteBatchResponse): Buffer => Buffer.from(BackupItemActionExecuteBatchResponse.encode(v).finish());

describe('ExecuteBatch request', () => {
  it('writes the generated encoder\'s bytes, and decodes back', () => {
    for (const v of [
      { plugin: 'bench.stowage.dev/stamp', backup: json({ kind: 'Backup' }), items: ITEMS, acceptPatches: true },
      { plugin: 'x/ü', backup: Buffer.alloc(0), items: [], acceptPatches: false },
      { plugin: '', backup: json({ kind: 'Backup' }), items: [ITEMS[0] as Buffer], acceptPatches: false },
      { plugin: '', backup: Buffer.alloc(0), items: [], acceptPatches: true },
    ]) {
      const bytes = serializeBatchRequest(v);
      expect(bytes.equals(generatedRequest(v))).toBe(true);
      const back = FastBackupItemActionService.executeBatch.requestDeserialize(bytes);
      expect(back.plugin).toBe(v.plugin);
      expect(back.acceptPatches).toBe(v.acceptPatches);
      expect(back.items.map((i) => Buffer.from(i).toString())).toEqual(v.items.map((i) => i.toString()));
    }
  });
});

describe('ExecuteBatch response', () => {
  const ok = (item: Buffer): BackupItemActionBatchResult => ({ item, itemPatch: Buffer.alloc(0), additionalItems: [], error: '' });
  const patched = (patch: unknown): BackupItemActionBatchResult => ({ item: Buffer.alloc(0), itemPatch: json(patch), additionalItems: [], error: '' });
  it('writes the generated encoder\'s bytes for items, patches and errors, and decodes back', () => {
    const v = {
      results: [
        ...ITEMS.map(ok),
        { item: Buffer.alloc(0), itemPatch: Buffer.alloc(0), additionalItems: [], error: 'the action failed: ünïcode' },
        patched([[['metadata', 'annotations', 'a'], 'ü'.repeat(100)]]),
        patched([]),
      ],
    };
    const bytes = serializeBatchResponse(v);
    expect(bytes.equals(generatedResponse(v))).toBe(true);
    const back = FastBackupItemActionService.executeBatch.responseDeserialize(bytes);
    expect(back.results.map((r) => Buffer.from(r.item).toString())).toEqual(v.results.map((r) => r.item.toString()));
    expect(back.results.map((r) => Buffer.from(r.itemPatch).toString())).toEqual(v.results.map((r) => r.itemPatch.toString()));
    expect(back.results.map((r) => r.error)).toEqual(v.results.map((r) => r.error));
    expect(serializeBatchResponse({ results: [] }).length).toBe(0);
  });

  it('uses the generated encoder when a result names additional items', () => {
    const v = { results: [ok(ITEMS[0] as Buffer), { item: ITEMS[1] as Buffer, itemPatch: Buffer.alloc(0), additionalItems: [{ groupResource: 'persistentvolumes', namespace: '', name: 'pv-1' }], error: '' }] };
    const bytes = serializeBatchResponse(v);
    expect(bytes.equals(generatedResponse(v))).toBe(true);
    expect(FastBackupItemActionService.executeBatch.responseDeserialize(bytes).results[1]?.additionalItems).toEqual(v.results[1]?.additionalItems);
  });
});
