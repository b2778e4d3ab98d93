import { describe, expect, it } from 'vitest';
import { DEFAULT_RESTORE_PRIORITIES, parseRestorePriorities } from '../config/config.js';
import { orderTiers, resolvePriorityEntry } from './priorities.js';

const labels = (tiers: ReturnType<typeof orderTiers>): string[][] => tiers.map((t) => t.groupResources);

describe('orderTiers', () => {
  it('puts the default high priorities first, in order, then the rest alphabetically, one tier each', () => {
    const grs = [
      'widgets.example.com', 'deployments.apps', 'configmaps', 'namespaces', 'customresourcedefinitions.apiextensions.k8s.io',
      'secrets', 'services', 'serviceaccounts', 'rolebindings.rbac.authorization.k8s.io', 'replicasets.apps', 'pods',
      'storageclasses.storage.k8s.io', 'persistentvolumes', 'persistentvolumeclaims', 'endpoints', 'limitranges',
      'clusterrolebindings.rbac.authorization.k8s.io', 'clusterroles.rbac.authorization.k8s.io', 'runtimeclasses.node.k8s.io',
      'priorityclasses.scheduling.k8s.io', 'cronjobs.batch',
    ];
    expect(labels(orderTiers(grs, DEFAULT_RESTORE_PRIORITIES))).toEqual([
      ['customresourcedefinitions.apiextensions.k8s.io'],
      ['namespaces'],
      ['storageclasses.storage.k8s.io'],
      ['persistentvolumes'],
      ['persistentvolumeclaims'],
      ['serviceaccounts'],
      ['secrets'],
      ['configmaps'],
      ['limitranges'],
      ['priorityclasses.scheduling.k8s.io'],
      ['runtimeclasses.node.k8s.io'],
      ['clusterroles.rbac.authorization.k8s.io'],
      ['clusterrolebindings.rbac.authorization.k8s.io'],
      ['pods'],
      ['replicasets.apps'],
      ['endpoints'],
      ['services'],
      ['cronjobs.batch'],
      ['deployments.apps'],
      ['rolebindings.rbac.authorization.k8s.io'],
      ['widgets.example.com'],
    ]);
  });

  it('honours a parsed --restore-resource-priorities with a low-priority tail after "-"', () => {
    const prio = parseRestorePriorities('namespaces,configmaps,-,clusters.cluster.x-k8s.io,secrets');
    expect(prio).toEqual({ high: ['namespaces', 'configmaps'], low: ['clusters.cluster.x-k8s.io', 'secrets'] });
    const tiers = orderTiers(['secrets', 'configmaps', 'zebras.example.com', 'apples.example.com', 'namespaces', 'clusters.cluster.x-k8s.io'], prio);
    expect(tiers.map((t) => t.label)).toEqual(['namespaces', 'configmaps', 'apples.example.com', 'zebras.example.com', 'clusters.cluster.x-k8s.io', 'secrets']);
  });

  it('leaves out entries that match nothing in the backup', () => {
    expect(labels(orderTiers(['configmaps'], { high: ['namespaces', 'configmaps'], low: ['secrets'] }))).toEqual([['configmaps']]);
  });

  it('resolves entries written as kinds or short names through discovery, preferring the core group', () => {
    const describe = (gr: string) =>
      ({
        'pods': { group: '', resource: 'pods', kind: 'Pod', shortNames: ['po'] },
        'pods.metrics.k8s.io': { group: 'metrics.k8s.io', resource: 'pods', kind: 'PodMetrics' },
        'volumesnapshotclasses.snapshot.storage.k8s.io': { group: 'snapshot.storage.k8s.io', resource: 'volumesnapshotclasses', kind: 'VolumeSnapshotClass', singularName: 'volumesnapshotclass' },
      })[gr] ?? { group: '', resource: gr };
    const tiers = orderTiers(['pods.metrics.k8s.io', 'pods', 'volumesnapshotclasses.snapshot.storage.k8s.io'], {
      high: ['volumesnapshotclass.snapshot.storage.k8s.io', 'po'],
      low: [],
    }, describe);
    expect(labels(tiers)).toEqual([['volumesnapshotclasses.snapshot.storage.k8s.io'], ['pods'], ['pods.metrics.k8s.io']]);
  });

  it('an exact group-resource wins over a plural that several groups share', () => {
    const c = [{ group: 'extensions', resource: 'ingresses' }, { group: 'networking.k8s.io', resource: 'ingresses' }];
    expect(resolvePriorityEntry('ingresses.networking.k8s.io', c)).toEqual(['ingresses.networking.k8s.io']);
    expect(resolvePriorityEntry('ingresses', c)).toEqual(['ingresses.extensions', 'ingresses.networking.k8s.io']);
  });
});
