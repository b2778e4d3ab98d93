import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManifestTable, withVersionDir } from './manifestTable.js';
import { itemPath } from './paths.js';

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

describe('ManifestTable', () => {
  it('gives every entry in the order added, an item\'s preferred-version copy right after its classic one with the same digest', () => {
    const t = new ManifestTable();
    t.add('metadata/version', sha('v'));
    t.add(itemPath('deployments.apps', 'shop', 'web'), sha('d'), 'v1-preferredversion');
    t.add(itemPath('namespaces', undefined, 'shop'), sha('n'), 'v1-preferredversion');
    t.add(itemPath('deployments.apps', 'shop', 'web', 'v1beta1'), sha('d1'));
    expect([...t]).toEqual([
      ['metadata/version', sha('v')],
      ['resources/deployments.apps/namespaces/shop/web.json', sha('d')],
      ['resources/deployments.apps/v1-preferredversion/namespaces/shop/web.json', sha('d')],
      ['resources/namespaces/cluster/shop.json', sha('n')],
      ['resources/namespaces/v1-preferredversion/cluster/shop.json', sha('n')],
      ['resources/deployments.apps/v1beta1/namespaces/shop/web.json', sha('d1')],
    ]);
    expect(t.size).toBe(6);
    expect(Object.keys(t.toJSON())).toEqual([...t].map(([p]) => p));
    expect(t.holds('resources/deployments.apps/namespaces/shop/web.json')).toBe(true);
    expect(t.holds('resources/deployments.apps/namespaces/shop/other.json')).toBe(false);
  });

  it('puts the version directory where itemPath does, for namespaced and cluster-scoped items', () => {
    for (const [gr, ns] of [['configmaps', 'n'], ['namespaces', undefined], ['widgets.example.com', 'a-b']] as const) {
      expect(withVersionDir(itemPath(gr, ns, 'x'), 'v2-preferredversion')).toBe(itemPath(gr, ns, 'x', 'v2-preferredversion'));
    }
  });

  it('keeps its digests past the first allocation (1024 records)', () => {
    const t = new ManifestTable();
    for (let i = 0; i < 5000; i++) t.add(itemPath('configmaps', 'n', `c${i}`), sha(String(i)), 'v1-preferredversion');
    const all = [...t];
    expect(all).toHaveLength(10_000);
    expect(all[0]).toEqual(['resources/configmaps/namespaces/n/c0.json', sha('0')]);
    expect(all[9999]).toEqual(['resources/configmaps/v1-preferredversion/namespaces/n/c4999.json', sha('4999')]);
    expect(all[2 * 4321]?.[1]).toBe(sha('4321'));
  });

  it('refuses a digest that is not 64 hex digits, and a second path for what is not an item', () => {
    const t = new ManifestTable();
    expect(() => t.add('metadata/version', 'AB'.repeat(32))).toThrow('not a SHA-256 in hex');
    expect(() => t.add('metadata/version', sha('v'), 'v1-preferredversion')).toThrow('metadata/version is not an item path');
    expect(t.size).toBe(0);
  });
});
