import { describe, expect, it } from 'vitest';
import { PlannedItems, type PlannedIdentity } from './plannedItems.js';

const item = (groupResource: string, sourceNamespace: string, sourceName: string): PlannedIdentity & { tag: string } => ({
  groupResource, sourceNamespace, sourceName, tag: `${groupResource}/${sourceNamespace}/${sourceName}`,
});

describe('PlannedItems', () => {
  it('finds an item by resource, namespace and name, and keeps the first of two with one identity', () => {
    const items = new PlannedItems<ReturnType<typeof item>>();
    const a = item('configmaps', 'app', 'cfg');
    expect(items.add(a)).toBe(true);
    expect(items.add({ ...a, tag: 'second' })).toBe(false);
    expect(items.get('configmaps', 'app', 'cfg')).toBe(a);
    expect(items.has('configmaps', 'app', 'cfg')).toBe(true);
    expect(items.size).toBe(1);
  });

  it('tells apart items that share two of the three parts, and cluster-scoped from namespaced ones', () => {
    const items = new PlannedItems<ReturnType<typeof item>>();
    const all = [
      item('configmaps', 'app', 'x'), item('secrets', 'app', 'x'), item('configmaps', 'other', 'x'),
      item('configmaps', 'app', 'y'), item('namespaces', '', 'app'), item('configmaps', '', 'app'),
    ];
    for (const p of all) expect(items.add(p)).toBe(true);
    for (const p of all) expect(items.get(p.groupResource, p.sourceNamespace, p.sourceName)).toBe(p);
    expect(items.get('secrets', 'other', 'x')).toBeUndefined();
    expect(items.has('namespaces', 'app', '')).toBe(false);
  });

  it('lists items in the order they were added, across resources and namespaces', () => {
    const items = new PlannedItems<ReturnType<typeof item>>();
    const order = [item('secrets', 'b', 's'), item('configmaps', 'a', 'c'), item('secrets', 'b', 'a'), item('namespaces', '', 'b')];
    for (const p of order) items.add(p);
    expect([...items.values()].map((p) => p.tag)).toEqual(order.map((p) => p.tag));
  });
});
