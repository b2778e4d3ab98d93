import { describe, expect, it } from 'vitest';
import { orderItems, prefetched } from './collect.js';

describe('prefetched', () => {
  it('yields everything in order and asks for the next element while the caller works', async () => {
    const log: string[] = [];
    async function* source(): AsyncGenerator<number> {
      for (let i = 1; i <= 3; i++) {
        log.push(`fetch ${i}`);
        yield i;
      }
    }
    const seen: number[] = [];
    for await (const v of prefetched(source())) {
      log.push(`use ${v}`);
      seen.push(v);
    }
    expect(seen).toEqual([1, 2, 3]);
    // Page 2 is requested before page 1 is used.
    expect(log.indexOf('fetch 2')).toBeLessThan(log.indexOf('use 1'));
  });

  it('closes the source when the caller stops early', async () => {
    let closed = false;
    async function* source(): AsyncGenerator<number> {
      try {
        for (let i = 0; ; i++) yield i;
      } finally {
        closed = true;
      }
    }
    for await (const v of prefetched(source())) if (v === 2) break;
    expect(closed).toBe(true);
  });
});

describe('orderItems', () => {
  const obj = (ns: string | undefined, name: string) => ({ metadata: ns === undefined ? { name } : { name, namespace: ns } });
  it('puts the named items first, in the given order, and keeps the rest in list order', () => {
    const items = [obj('a', 'p1'), obj('a', 'p2'), obj('b', 'p3'), obj('a', 'p4')];
    expect(orderItems(items, ['b/p3', 'a/p2', 'a/missing']).map((o) => o.metadata?.name)).toEqual(['p3', 'p2', 'p1', 'p4']);
    expect(orderItems([obj(undefined, 'pv1'), obj(undefined, 'pv2')], ['pv2']).map((o) => o.metadata?.name)).toEqual(['pv2', 'pv1']);
    expect(orderItems(items, undefined)).toBe(items);
  });
});
