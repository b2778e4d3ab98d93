import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../plugin/api/index.js';
import { fullImageName, mapImage } from './images.js';
import { mappingConfigOf, type ConfigMapLike } from './mappingConfig.js';
import { mappingActions, takeChanges, type MappingConfig } from './mappings.js';

const cm = (name: string, labels: Record<string, string>, data: Record<string, string>): ConfigMapLike => ({ metadata: { name, namespace: 'stowage', labels }, data });
const STOWAGE = (action: string): Record<string, string> => ({ 'stowage.dev/plugin-config': '', [`stowage.dev/${action}`]: 'RestoreItemAction' });

function configOf(...cms: ConfigMapLike[]): MappingConfig {
  const r = mappingConfigOf(cms);
  if ('errors' in r) throw new Error(r.errors.join('\n'));
  return r.config;
}

async function run(config: MappingConfig, item: KubeObject): Promise<{ item: KubeObject; changes: string[] }> {
  let cur = structuredClone(item);
  const changes: string[] = [];
  for (const { action } of mappingActions(config)) {
    const sel = await action.appliesTo();
    const gr = { Pod: 'pods', CronJob: 'cronjobs.batch', Deployment: 'deployments.apps', StatefulSet: 'statefulsets.apps', PersistentVolumeClaim: 'persistentvolumeclaims', PersistentVolume: 'persistentvolumes' }[item.kind] ?? '';
    if (!sel.includedResources.includes(gr)) continue;
    cur = (await action.execute({ item: cur, itemFromBackup: item, restore: item })).item;
    changes.push(...takeChanges(cur));
  }
  return { item: cur, changes };
}

describe('mapping configuration', () => {
  it('reads Stowage and Velero labels, and refuses two ConfigMaps for one action or bad entries', () => {
    const c = configOf(
      cm('sc', { 'velero.io/plugin-config': '', 'velero.io/change-storage-class': 'RestoreItemAction' }, { standard: 'fast' }),
      cm('img', STOWAGE('change-image-name'), { a: 'docker.io/library,mirror.local/hub' }),
      cm('other', { 'stowage.dev/change-image-name': 'RestoreItemAction' }, { a: 'x,y' }),
    );
    expect(c.storageClasses?.map.get('standard')).toBe('fast');
    expect(c.images).toEqual({ source: 'ConfigMap stowage/img', mode: 'prefix', rules: [{ key: 'a', from: 'docker.io/library', to: 'mirror.local/hub' }] });
    expect(mappingConfigOf([cm('a', STOWAGE('change-storage-class'), {}), cm('b', { 'velero.io/plugin-config': '', 'velero.io/change-storage-class': 'RestoreItemAction' }, {})]))
      .toEqual({ errors: ['more than one ConfigMap configures change-storage-class: a (stowage.dev/change-storage-class), b (velero.io/change-storage-class); keep one'] });
    expect(mappingConfigOf([cm('i', STOWAGE('change-image-name'), { r: 'nocomma' }), cm('n', STOWAGE('change-node-selector'), { z: 'a=b,c' }), cm('s', STOWAGE('change-storage-class'), { x: 'Not_A_Class' })]))
      .toEqual({ errors: [
        'ConfigMap stowage/i (change-image-name): data "r": "nocomma" is not "old,new"',
        'ConfigMap stowage/n (change-node-selector): data "z": "a=b,c": both sides must be key=value, or both a key',
        'ConfigMap stowage/s (change-storage-class): data "x": "Not_A_Class" is not a storage class name',
      ] });
  });
});

describe('image mapping', () => {
  const rules = [{ key: 'a', from: 'registry.old', to: 'registry.new' }, { key: 'b', from: 'registry.old/team', to: 'mirror/team-x' }, { key: 'c', from: 'docker.io/library', to: 'hub.local/lib' }];
  it('maps the longest registry or repository prefix at a name boundary, Docker Hub short names included', () => {
    expect(mapImage('registry.old/app:1', rules, 'prefix')?.image).toBe('registry.new/app:1');
    expect(mapImage('registry.old/team/app@sha256:ab', rules, 'prefix')?.image).toBe('mirror/team-x/app@sha256:ab');
    expect(mapImage('registry.older/app:1', rules, 'prefix')).toBeUndefined();
    expect(mapImage('nginx:1.25', rules, 'prefix')?.image).toBe('hub.local/lib/nginx:1.25');
    expect(fullImageName('bitnami/redis')).toBe('docker.io/bitnami/redis');
    expect(fullImageName('localhost/x')).toBe('localhost/x');
  });
  it('keeps Velero\'s substring meaning for velero.io ConfigMaps', () => {
    expect(mapImage('1.1.1.1:5000/abc:test', [{ key: 'case2', from: '5000', to: '3000' }], 'substring')?.image).toBe('1.1.1.1:3000/abc:test');
  });
  it('maps containers and init containers of Pods and CronJobs', async () => {
    const config = configOf(cm('img', STOWAGE('change-image-name'), { a: 'registry.old,registry.new' }));
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { initContainers: [{ name: 'i', image: 'registry.old/init:1' }], containers: [{ name: 'c', image: 'registry.old/app:2' }, { name: 'd', image: 'other/x' }] } };
    const r = await run(config, pod);
    expect(r.item.spec).toEqual({ initContainers: [{ name: 'i', image: 'registry.new/init:1' }], containers: [{ name: 'c', image: 'registry.new/app:2' }, { name: 'd', image: 'other/x' }] });
    expect(r.changes).toEqual(['init container i: image registry.old/init:1 -> registry.new/init:1 (ConfigMap stowage/img)', 'container c: image registry.old/app:2 -> registry.new/app:2 (ConfigMap stowage/img)']);
    const cron = { apiVersion: 'batch/v1', kind: 'CronJob', metadata: { name: 'c' }, spec: { jobTemplate: { spec: { template: { spec: { containers: [{ name: 'c', image: 'registry.old/job' }] } } } } } };
    expect((await run(config, cron)).item).toMatchObject({ spec: { jobTemplate: { spec: { template: { spec: { containers: [{ image: 'registry.new/job' }] } } } } } });
  });
});

describe('storage class and node label mapping', () => {
  it('maps PVCs (with the beta annotation), PVs and StatefulSet claim templates', async () => {
    const config = configOf(cm('sc', STOWAGE('change-storage-class'), { standard: 'fast' }));
    const pvc = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c', annotations: { 'volume.beta.kubernetes.io/storage-class': 'standard' } }, spec: { storageClassName: 'standard' } };
    const r = await run(config, pvc);
    expect(r.item).toMatchObject({ metadata: { annotations: { 'volume.beta.kubernetes.io/storage-class': 'fast' } }, spec: { storageClassName: 'fast' } });
    expect(r.changes).toEqual(['storage class standard -> fast (ConfigMap stowage/sc)', 'storage class annotation standard -> fast (ConfigMap stowage/sc)']);
    expect((await run(config, { apiVersion: 'v1', kind: 'PersistentVolume', metadata: { name: 'v' }, spec: { storageClassName: 'standard' } })).item).toMatchObject({ spec: { storageClassName: 'fast' } });
    const sts = { apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 's' }, spec: { volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { storageClassName: 'standard' } }, { metadata: { name: 'logs' }, spec: { storageClassName: 'gold' } }] } };
    const s = await run(config, sts);
    expect(s.item).toMatchObject({ spec: { volumeClaimTemplates: [{ spec: { storageClassName: 'fast' } }, { spec: { storageClassName: 'gold' } }] } });
    expect(s.changes).toEqual(['volume claim template data: storage class standard -> fast (ConfigMap stowage/sc)']);
  });
  it('maps node selectors, node affinity values and topology keys', async () => {
    const config = configOf(cm('n', STOWAGE('change-node-selector'), {
      zone: 'topology.kubernetes.io/zone=us-east-1a,topology.kubernetes.io/zone=eu-west-1b',
      disk: 'disktype,example.com/disk',
    }));
    const dep = {
      apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' },
      spec: { template: { spec: {
        nodeSelector: { 'topology.kubernetes.io/zone': 'us-east-1a', disktype: 'ssd', other: 'x' },
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', operator: 'In', values: ['us-east-1a', 'us-east-1c'] }] }] },
            preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: { matchExpressions: [{ key: 'disktype', operator: 'Exists' }] } }],
          },
          podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'disktype', labelSelector: {} }] },
        },
        containers: [{ name: 'c', image: 'x' }],
      } } },
    };
    const r = await run(config, dep);
    expect(r.item).toMatchObject({ spec: { template: { spec: {
      nodeSelector: { 'topology.kubernetes.io/zone': 'eu-west-1b', 'example.com/disk': 'ssd', other: 'x' },
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'topology.kubernetes.io/zone', values: ['eu-west-1b', 'us-east-1c'] }] }] },
          preferredDuringSchedulingIgnoredDuringExecution: [{ preference: { matchExpressions: [{ key: 'example.com/disk' }] } }],
        },
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'example.com/disk' }] },
      },
    } } } });
    expect(r.changes.length).toBe(5);
  });
});
