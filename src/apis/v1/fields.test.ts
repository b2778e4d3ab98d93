import { describe, expect, it } from 'vitest';
import { buildCrd, KINDS } from './index.js';
import { isUnset, specFieldErrors, specFieldProblems } from './fields.js';

describe('specFieldProblems', () => {
  it('accepts a spec of honoured fields', () => {
    expect(specFieldProblems('Backup', {
      includedNamespaces: ['a'], ttl: '1h', labelSelector: { matchLabels: { app: 'x' }, matchExpressions: [{ key: 'k', operator: 'Exists' }] },
    })).toEqual([]);
    expect(specFieldProblems('Restore', { backupName: 'b', restoreStatus: { includedResources: ['*'] }, dryRun: true })).toEqual([]);
    expect(specFieldProblems('Schedule', { schedule: '@daily', template: { includedNamespaces: ['a'] }, keepLast: 3 })).toEqual([]);
  });

  it('refuses a set unimplemented field by path, with what to do', () => {
    // Backup hooks are honoured (issue 36): a typo in them is still refused by name.
    expect(specFieldErrors('Backup', { hooks: { resources: [{ name: 'quiesce', pre: [{ exec: { command: ['fsfreeze'] } }] }] } })).toEqual([]);
    expect(specFieldErrors('Backup', { hooks: { resources: [{ name: 'quiesce', pre: [{ exec: { command: ['fsfreeze'], onerror: 'Fail' } }] }] } })).toEqual([
      'spec.hooks.resources[0].pre[0].exec.onerror: unknown field (spec.hooks.resources[0].pre[0].exec has no such field); fix its spelling or remove it',
    ]);
    // CSI snapshots are taken (snapshotVolumes); file-system backup and the data mover are refused with why.
    expect(specFieldErrors('Backup', { snapshotVolumes: true, defaultVolumesToFsBackup: true, snapshotMoveData: true })).toEqual([
      'spec.snapshotMoveData: moving snapshot data into the bucket (Velero\'s data mover) is not supported: a CSI snapshot stays in the storage system that took it; remove the field or set it to false',
      'spec.defaultVolumesToFsBackup: file-system backup of pod volumes (Velero\'s node agent, Kopia or Restic) is not supported: Stowage backs volume data up through CSI snapshots (snapshotVolumes); remove the field or set it to false',
    ]);
    expect(specFieldErrors('Backup', { volumeSnapshotLocations: ['aws-default'] })).toEqual([
      'spec.volumeSnapshotLocations: VolumeSnapshotLocations and VolumeSnapshotter plugins are not supported: Stowage takes volume snapshots through CSI only (snapshotVolumes, with a VolumeSnapshotClass); remove the field',
    ]);
    // Restore hooks are honoured (src/hooks/restoreSpec.ts validates them); a misspelt field in them is refused by name.
    expect(specFieldErrors('Restore', { backupName: 'b', hooks: { resources: [{ name: 'h', postHook: [] }] }, restorePVs: true })).toEqual([
      'spec.hooks.resources[0].postHook: unknown field (spec.hooks.resources[0] has no such field); fix its spelling or remove it',
    ]);
  });

  it('accepts an unimplemented field that asks for nothing (false, null, empty: what Velero writes by default)', () => {
    expect(specFieldProblems('Backup', {
      snapshotVolumes: false, defaultVolumesToFsBackup: null, hooks: {}, metadata: { labels: {} }, volumeSnapshotLocations: [], datamover: '',
    })).toEqual([]);
    expect(specFieldProblems('Restore', { backupName: 'b', restorePVs: false, hooks: { resources: [] } })).toEqual([]);
  });

  it('refuses fields no schema declares, at any depth, instead of letting them drop', () => {
    expect(specFieldErrors('Backup', { snapshotVolume: true })).toEqual([
      'spec.snapshotVolume: unknown field (the Backup spec has no such field); fix its spelling or remove it',
    ]);
    expect(specFieldErrors('Backup', { labelSelector: { matchLables: { app: 'x' } }, orLabelSelectors: [{}, { matchExpressions: [{ key: 'k', operator: 'In', value: ['v'] }] }] })).toEqual([
      'spec.labelSelector.matchLables: unknown field (spec.labelSelector has no such field); fix its spelling or remove it',
      'spec.orLabelSelectors[1].matchExpressions[0].value: unknown field (spec.orLabelSelectors[1].matchExpressions[0] has no such field); fix its spelling or remove it',
    ]);
    expect(specFieldErrors('Backup', JSON.parse('{"constructor": 1, "toString": "x"}'))).toEqual([
      'spec.constructor: unknown field (the Backup spec has no such field); fix its spelling or remove it',
      'spec.toString: unknown field (the Backup spec has no such field); fix its spelling or remove it',
    ]);
    expect(specFieldErrors('Restore', { backupName: 'b', restoreStatus: { included: ['pods'] } })).toEqual([
      'spec.restoreStatus.included: unknown field (spec.restoreStatus has no such field); fix its spelling or remove it',
    ]);
  });

  it('names a Schedule template\'s fields under spec.template', () => {
    expect(specFieldErrors('Schedule', { schedule: '@daily', template: { datamover: 'velero', snapshotvolumes: true }, keeplast: 2 })).toEqual([
      'spec.template.datamover: moving snapshot data into the bucket (Velero\'s data mover) is not supported: a CSI snapshot stays in the storage system that took it; remove the field',
      'spec.template.snapshotvolumes: unknown field (spec.template has no such field); fix its spelling or remove it',
      'spec.keeplast: unknown field (the Schedule spec has no such field); fix its spelling or remove it',
    ]);
  });

  it('isUnset: only values that ask for nothing', () => {
    for (const v of [undefined, null, false, '', [], {}, { resources: [] }, { labels: {} }]) expect(isUnset(v), JSON.stringify(v)).toBe(true);
    for (const v of [true, 0, '10m', ['x'], { resources: [{}] }, { parallelFilesUpload: 4 }]) expect(isUnset(v), JSON.stringify(v)).toBe(false);
  });
});

describe('the CRDs keep what validation must see', () => {
  // The apiserver prunes what a structural schema does not declare: without these markers a typo or
  // an unimplemented Velero field would be dropped on create, and the run would go ahead without it.
  it('preserves unknown fields in every object of the Backup, Restore and Schedule specs', () => {
    const unmarked: string[] = [];
    const visit = (node: Record<string, unknown>, at: string): void => {
      if (node.type === 'object' && node.properties !== undefined && node['x-kubernetes-preserve-unknown-fields'] !== true) unmarked.push(at);
      for (const [k, v] of Object.entries((node.properties ?? {}) as Record<string, Record<string, unknown>>)) visit(v, `${at}.${k}`);
      if (node.items !== undefined) visit(node.items as Record<string, unknown>, `${at}[]`);
    };
    for (const kind of ['Backup', 'Restore', 'Schedule']) {
      const def = KINDS.find((k) => k.kind === kind);
      if (def === undefined) throw new Error(`no kind ${kind}`);
      const root = buildCrd(def).spec.versions[0]?.schema.openAPIV3Schema as { properties: { spec: Record<string, unknown> } };
      visit(root.properties.spec, `${kind}.spec`);
    }
    expect(unmarked).toEqual([]);
  });
});
