import { describe, expect, it } from 'vitest';
import type { ResourceRecord } from '../../persistence/results.js';
import { checkAgreement } from '../../persistence/verify.js';
import { completenessSection } from './backup.js';

const entries = (...paths: string[]) => ({ entries: Object.fromEntries(['metadata/version', ...paths].map((p) => [p, 'x'])) });
const both = (gr: string, version: string, scoped: string) => [`resources/${gr}/${scoped}.json`, `resources/${gr}/${version}-preferredversion/${scoped}.json`];

describe('checkAgreement', () => {
  const records: ResourceRecord[] = [
    { groupResource: 'cronjobs.batch', apiVersion: 'batch/v1beta1', listed: 1, written: 1 },
    { groupResource: 'widgets.example.com', apiVersion: 'example.com/v1', listed: 1, written: 1, otherVersions: ['example.com/v1alpha1'] },
    { groupResource: 'namespaces', apiVersion: 'v1', listed: 1, written: 1 },
    { groupResource: 'secrets', apiVersion: 'v1', listed: 0, written: 0, error: 'listing secrets failed: forbidden' },
  ];
  const list = { 'cronjobs.batch': ['ns/nightly'], 'widgets.example.com': ['ns/w1'], namespaces: ['ns'] };
  const good = entries(
    ...both('cronjobs.batch', 'v1beta1', 'namespaces/ns/nightly'),
    ...both('widgets.example.com', 'v1', 'namespaces/ns/w1'),
    'resources/widgets.example.com/v1alpha1/namespaces/ns/w1.json',
    ...both('namespaces', 'v1', 'cluster/ns'),
  );

  it('finds nothing when the manifest, the resource list and the record describe the same items', () => {
    expect(checkAgreement(good, list, records)).toEqual([]);
    // A backup made before the completeness record: the list and the classic copies still agree.
    expect(checkAgreement(good, list, undefined)).toEqual([]);
  });

  it('names every item the resource list holds without its copies in the manifest, and the reverse', () => {
    const m = { entries: { ...good.entries } };
    delete m.entries['resources/cronjobs.batch/v1beta1-preferredversion/namespaces/ns/nightly.json'];
    delete m.entries['resources/widgets.example.com/v1alpha1/namespaces/ns/w1.json'];
    m.entries['resources/configmaps/namespaces/ns/intruder.json'] = 'y';
    m.entries['resources/namespaces/v2-preferredversion/cluster/ns.json'] = 'y';
    expect(checkAgreement(m, list, records)).toEqual([
      'cronjobs.batch "ns/nightly" is in the resource list but the manifest has no resources/cronjobs.batch/v1beta1-preferredversion/namespaces/ns/nightly.json',
      'widgets.example.com "ns/w1" is recorded as stored at example.com/v1alpha1 too, but the manifest has no resources/widgets.example.com/v1alpha1/namespaces/ns/w1.json',
      'resources/configmaps/namespaces/ns/intruder.json is in the manifest but configmaps "ns/intruder" is not in the resource list',
      'resources/namespaces/v2-preferredversion/cluster/ns.json is in the manifest but the completeness record has namespaces at v1',
    ]);
  });

  it('compares the record\'s written counts with the resource list', () => {
    const off = records.map((r) => (r.groupResource === 'cronjobs.batch' ? { ...r, written: 2 } : r)).filter((r) => r.groupResource !== 'namespaces');
    expect(checkAgreement(good, list, off)).toEqual([
      'the completeness record says 2 cronjobs.batch written, the resource list holds 1',
      'the resource list holds 1 namespaces, which the completeness record does not mention',
    ]);
  });
});

describe('completenessSection', () => {
  it('tabulates resources with items or errors, and sums up the empty ones', () => {
    expect(completenessSection([
      { groupResource: 'configmaps', apiVersion: 'v1', listed: 0, written: 0 },
      { groupResource: 'cronjobs.batch', apiVersion: 'batch/v1beta1', listed: 2, written: 2 },
      { groupResource: 'secrets', apiVersion: 'v1', listed: 0, written: 0, error: 'listing secrets failed: forbidden' },
      { groupResource: 'widgets.example.com', apiVersion: 'example.com/v1', listed: 1, written: 1, otherVersions: ['example.com/v1alpha1'] },
    ])).toBe(
      'Resources:  4 in scope, 3 items written, 1 with errors\n' +
      '  RESOURCE              VERSION                                  LISTED   WRITTEN   ERROR\n' +
      '  cronjobs.batch        batch/v1beta1                            2        2\n' +
      '  secrets               v1                                       0        0         listing secrets failed: forbidden\n' +
      '  widgets.example.com   example.com/v1 (+example.com/v1alpha1)   1        1\n' +
      '  (1 more listed with no items)\n',
    );
    expect(completenessSection(undefined)).toMatch(/^Resources: +<not recorded/);
    // A pulled-in item is written without a LIST having returned it; the table says why.
    expect(completenessSection([{ groupResource: 'clusterroles.rbac.authorization.k8s.io', apiVersion: 'rbac.authorization.k8s.io/v1', listed: 0, written: 1 }]))
      .toMatch(/\n {2}\(WRITTEN above LISTED: items taken by name as dependencies of items in scope, see "Pulled in"\)\n$/);
  });
});
