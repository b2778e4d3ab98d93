import { describe, expect, it } from 'vitest';
import { applyItemPatch, diffItem, PatchError } from './itemPatch.js';

type Obj = Record<string, unknown>;

const ITEM = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: {
    name: 'cm', namespace: 'ns', labels: { app: 'a' }, annotations: { keep: 'x', drop: 'y' },
    managedFields: [{ manager: 'm', fieldsV1: { 'f:data': { '.': {} } } }],
  },
  data: { a: '1', b: 'ü', nested: '{"x":1}' },
  spec: { list: [1, 'two', { three: 3 }, null], n: 0, f: false, nul: null },
};

/** What the host makes of the answer: the patch over the wire, applied to the item as sent. */
const roundTrip = (sent: Obj, out: Obj): Obj => applyItemPatch(sent, JSON.parse(JSON.stringify(diffItem(JSON.parse(JSON.stringify(sent)) as Obj, out))));
/** What the host made of a whole item. */
const whole = (out: Obj): unknown => JSON.parse(JSON.stringify(out));

/** The changes an action may make, each on a fresh parse of the item (the plugin's input). */
const ACTIONS: Record<string, (item: Obj) => Obj> = {
  'returns its input unchanged': (i) => i,
  'adds an annotation by spreading': (i) => {
    const m = i.metadata as Obj;
    return { ...i, metadata: { ...m, annotations: { ...(m.annotations as Obj), stamp: 'true' } } };
  },
  'changes its input in place': (i) => {
    const m = i.metadata as { labels: Obj; annotations: Obj };
    m.labels.tier = 'web';
    delete m.annotations.drop;
    (i.data as Obj).a = '2';
    return i;
  },
  'deletes and replaces whole parts': (i) => {
    const { data: _data, ...rest } = i;
    return { ...rest, spec: { ...(i.spec as Obj), list: [1, 'two'], nul: 'now set', n: undefined } };
  },
  'sets values JSON writes its own way': (i) => ({ ...i, data: { ...(i.data as Obj), when: new Date(0), fn: () => 1, nan: Number.NaN, arr: [undefined, 1] } }),
  'changes an element deep in an array': (i) => {
    ((i.spec as { list: Obj[] }).list[2] as Obj).three = 4;
    return i;
  },
  'replaces an object by a string and a string by an object': (i) => ({ ...i, spec: 'flat', data: { ...(i.data as Obj), a: { deep: true } } }),
  'builds a new object with equal content': (i) => JSON.parse(JSON.stringify(i)) as Obj,
};

describe('item patches', () => {
  for (const [name, action] of Object.entries(ACTIONS)) {
    it(`give what the whole item would when the action ${name}`, () => {
      const out = action(JSON.parse(JSON.stringify(ITEM)) as Obj);
      const host = roundTrip(ITEM, out);
      expect(host).toEqual(whole(out));
      expect(JSON.stringify(ITEM)).toBe(JSON.stringify(whole(ITEM))); // the sent item is left as it was
    });
  }

  it('are empty when nothing changed, and the host keeps the very object it sent', () => {
    const sent = JSON.parse(JSON.stringify(ITEM)) as Obj;
    expect(diffItem(sent, JSON.parse(JSON.stringify(ITEM)) as Obj)).toEqual([]);
    expect(applyItemPatch(sent, [])).toBe(sent);
  });

  it('name only what changed, and share the rest with the item as sent', () => {
    const sent = JSON.parse(JSON.stringify(ITEM)) as typeof ITEM;
    const ops = diffItem(JSON.parse(JSON.stringify(ITEM)) as Obj, ACTIONS['adds an annotation by spreading']!(JSON.parse(JSON.stringify(ITEM)) as Obj));
    expect(ops).toEqual([[['metadata', 'annotations', 'stamp'], 'true']]);
    const out = applyItemPatch(sent, ops);
    expect(out.data).toBe(sent.data);
    expect(out.metadata.labels).toBe(sent.metadata.labels);
    expect(out.metadata).not.toBe(sent.metadata);
    expect(sent.metadata.annotations).toEqual({ keep: 'x', drop: 'y' });
  });

  it('keep a "__proto__" key an ordinary key both ways', () => {
    const sent = JSON.parse('{"metadata":{"name":"p"},"data":{"__proto__":"a"}}') as Obj;
    const out = JSON.parse('{"metadata":{"name":"p"},"data":{"__proto__":"b","x":{"__proto__":{"y":1}}}}') as Obj;
    const host = roundTrip(sent, out);
    expect(JSON.stringify(host)).toBe(JSON.stringify(out));
    expect(Object.getPrototypeOf(host.data)).toBe(Object.prototype);
    expect(({} as { y?: number }).y).toBeUndefined();
  });

  it('that do not apply are refused with the operation and the reason', () => {
    const sent = JSON.parse(JSON.stringify(ITEM)) as Obj;
    const refused = (patch: unknown): string => {
      try {
        applyItemPatch(sent, patch);
      } catch (err) {
        expect(err).toBeInstanceOf(PatchError);
        return (err as Error).message;
      }
      throw new Error('applied');
    };
    expect(refused({ set: 1 })).toBe('the patch is not a JSON array');
    expect(refused([[['metadata', 'name'], 'x', 'y']])).toBe('operation 0 is not [path] or [path, value]');
    expect(refused([[['kind'], 'X'], [[], 1]])).toBe('operation 1: the path is not a non-empty array of keys');
    expect(refused([[['metadata', 3]]])).toBe('operation 0: the path is not a non-empty array of keys');
    expect(refused([[['data', 'a', 'deeper'], 1]])).toBe('operation 0: ["data","a"] is not an object in the item');
    expect(refused([[['spec', 'list', '0'], 1]])).toBe('operation 0: ["spec","list"] is not an object in the item');
    expect(refused([[['missing', 'x'], 1]])).toBe('operation 0: ["missing"] is not an object in the item');
    expect(JSON.stringify(sent)).toBe(JSON.stringify(ITEM));
  });
});
