// Rule files in the format Velero documents (test/fixtures/resource-modifiers), read unchanged
// from a ConfigMap's single data entry and applied to items, with the results Velero gives.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { applyResourceModifiers, type ModifiedItem } from './apply.js';
import { parseResourceModifiers, type ResourceModifiers } from './rules.js';

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../test/fixtures/resource-modifiers');

function load(file: string): ResourceModifiers {
  const parsed = parseResourceModifiers({ [file]: fs.readFileSync(path.join(DIR, file), 'utf8') }, 'ConfigMap velero/mods');
  if ('errors' in parsed) throw new Error(parsed.errors.join('\n'));
  return parsed.modifiers;
}

const at = (groupResource: string, sourceNamespace: string): ModifiedItem => ({ groupResource, sourceNamespace, namespaced: sourceNamespace !== '' });

describe('Velero-format rule files', () => {
  it('accepts every fixture unchanged', () => {
    const files = fs.readdirSync(DIR).filter((f) => f.endsWith('.yaml'));
    expect(files.length).toBeGreaterThanOrEqual(6);
    for (const f of files) expect(load(f).rules.length, f).toBeGreaterThan(0);
  });

  it('json-patches: conditions on group-resource, name regex, namespaces and labels; replace and remove', () => {
    const mods = load('json-patches.yaml');
    const pvc = { metadata: { name: 'mysql-data', labels: { foo: 'bar', test: 'x' } }, spec: { storageClassName: 'standard' } };
    const r = applyResourceModifiers(mods, at('persistentvolumeclaims', 'foo'), pvc);
    expect(r.error).toBeUndefined();
    expect(r.object).toEqual({ metadata: { name: 'mysql-data', labels: { foo: 'bar' } }, spec: { storageClassName: 'premium' } });
    expect(r.applied).toEqual(['resource modifier rule 0 (ConfigMap velero/mods, groupResource persistentvolumeclaims, JSON patch)']);
    expect(pvc.spec.storageClassName).toBe('standard');
    // Each condition on its own keeps the rule off.
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims', 'other'), pvc).applied).toEqual([]);
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims', 'foo'), { ...pvc, metadata: { ...pvc.metadata, name: 'pg-data' } }).applied).toEqual([]);
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims', 'foo'), { ...pvc, metadata: { name: 'mysql-data', labels: { foo: 'baz', test: 'x' } } }).applied).toEqual([]);
    expect(applyResourceModifiers(mods, at('configmaps', 'foo'), pvc).applied).toEqual([]);
  });

  it('test-operation: the rule applies only when its test holds', () => {
    const mods = load('test-operation.yaml');
    const premium = { metadata: { name: 'a' }, spec: { storageClassName: 'premium' } };
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims', 'bar'), premium).object).toEqual({ metadata: { name: 'a' }, spec: { storageClassName: 'standard' } });
    const gold = { metadata: { name: 'a' }, spec: { storageClassName: 'gold' } };
    const r = applyResourceModifiers(mods, at('persistentvolumeclaims', 'bar'), gold);
    expect(r.error).toBeUndefined();
    expect(r.object).toEqual(gold);
    expect(r.applied[0]).toMatch(/not applied, its test failed/);
  });

  it('complex-values: escaped JSON, copy, move, numbers, booleans, quoted strings and null', () => {
    const mods = load('complex-values.yaml');
    const deploy = {
      metadata: { name: 'test-web', labels: { tier: 'web', old: 'v' }, annotations: {} },
      spec: { replicas: 1, revisionHistoryLimit: 10, template: { spec: { containers: [{ name: 'app', image: 'app:1' }] } } },
    };
    const r = applyResourceModifiers(mods, at('deployments.apps', 'bar'), deploy);
    expect(r.error).toBeUndefined();
    const nginx = { name: 'nginx', image: 'nginx:1.14.2', ports: [{ containerPort: 80 }] };
    expect(r.object).toEqual({
      metadata: { name: 'test-web', labels: { tier: 'web', new: 'v' }, annotations: { count: '42' } },
      spec: { replicas: 3, paused: false, revisionHistoryLimit: null, template: { spec: { containers: [nginx, nginx, { name: 'app', image: 'app:1' }] } } },
    });
    // matchExpressions: tier In (web)
    expect(applyResourceModifiers(mods, at('deployments.apps', 'bar'), { ...deploy, metadata: { name: 'test-web', labels: { tier: 'db', old: 'v' } } }).applied).toEqual([]);
  });

  it('a patch that cannot apply is the item\'s error, naming the rule', () => {
    const mods = load('complex-values.yaml');
    const r = applyResourceModifiers(mods, at('deployments.apps', 'foo'), { metadata: { name: 'test-x', labels: { tier: 'web' } }, spec: {} });
    expect(r.error).toMatch(/^resource modifier rule 0 \(ConfigMap velero\/mods, groupResource deployments.apps, JSON patch\) failed: operation 0 \(add \/spec\/template\/spec\/containers\/0\): /);
  });

  it('merge-patches: JSON and YAML patch data; matches conditions', () => {
    const mods = load('merge-patches.yaml');
    const pod = { metadata: { name: 'p', annotations: { foo: '1', keep: '2' } } };
    expect(applyResourceModifiers(mods, at('pods', 'ns1'), pod).object).toEqual({ metadata: { name: 'p', annotations: { keep: '2' } } });
    const pvc = (sc: string): Record<string, unknown> => ({ metadata: { name: 'c', annotations: { foo: '1' } }, spec: { storageClassName: sc } });
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims.storage.k8s.io', 'x'), pvc('premium')).object).toEqual({ metadata: { name: 'c', annotations: {} }, spec: { storageClassName: 'premium' } });
    expect(applyResourceModifiers(mods, at('persistentvolumeclaims.storage.k8s.io', 'x'), pvc('gold')).applied).toEqual([]);
  });

  it('strategic-patches: containers merge by name, service ports by port, with $patch delete and $setElementOrder', () => {
    const mods = load('strategic-patches.yaml');
    const pod = { metadata: { name: 'my-pod' }, spec: { containers: [{ name: 'nginx', image: 'nginx', ports: [{ containerPort: 80 }] }, { name: 'side', image: 'side:1' }] } };
    expect(applyResourceModifiers(mods, at('pods', 'ns1'), pod).object).toEqual({
      metadata: { name: 'my-pod' },
      spec: { containers: [{ name: 'nginx', image: 'repo2/nginx', ports: [{ containerPort: 80 }] }, { name: 'side', image: 'side:1' }] },
    });
    const svc = { metadata: { name: 's' }, spec: { ports: [{ name: 'fake', port: 8000, protocol: 'TCP', targetPort: 8000 }, { name: 'other', port: 8001 }] } };
    expect(applyResourceModifiers(mods, at('services', 'ns1'), svc).object).toEqual({
      metadata: { name: 's' },
      spec: { ports: [{ name: 'other', port: 8001 }, { name: 'fake', port: 9000, protocol: 'TCP', targetPort: 9000 }] },
    });
  });

  it('wildcards: *.apps takes every apps resource, * every core one; rules match the item as it was', () => {
    const mods = load('wildcards.yaml');
    const obj = { metadata: { name: 'x', labels: { a: 'b' } } };
    expect(applyResourceModifiers(mods, at('statefulsets.apps', 'foo'), obj).object).toEqual({ metadata: { name: 'x', labels: { a: 'b', migrated: 'true' } } });
    expect(applyResourceModifiers(mods, at('configmaps', 'foo'), obj).object).toEqual({ metadata: { name: 'x', labels: { a: 'c' } } });
    expect(applyResourceModifiers(mods, at('jobs.batch', 'foo'), obj).applied).toEqual([]);
  });
});
