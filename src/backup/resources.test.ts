import { describe, expect, it } from 'vitest';
import { newBackup, type BackupSpec } from '../apis/v1/index.js';
import type { ApiResource } from '../kube/index.js';
import { newBackupRequest } from './request.js';
import { mayIncludeGroup, unservedIncludes } from './resources.js';

const r = (group: string, resource: string, kind: string, shortNames: string[] = []): ApiResource => ({
  group, version: 'v1', resource, kind, namespaced: true, verbs: ['list', 'get', 'create'], shortNames, singularName: kind.toLowerCase(),
  groupResource: group === '' ? resource : `${resource}.${group}`, apiVersion: group === '' ? 'v1' : `${group}/v1`,
});
const DISCOVERED = [r('', 'configmaps', 'ConfigMap', ['cm']), r('batch', 'cronjobs', 'CronJob', ['cj']), r('example.com', 'widgets', 'Widget')];
const req = (spec: BackupSpec) => newBackupRequest(newBackup('b', 'stowage', spec));

describe('unservedIncludes', () => {
  it('names the include entries that match no discovered resource, in any of the forms a filter accepts', () => {
    expect(unservedIncludes(req({ includedResources: ['cm', 'CronJob', 'widgets.example.com', 'widgets.other.io', 'gizmos'] }), DISCOVERED))
      .toEqual(['widgets.other.io', 'gizmos']);
    expect(unservedIncludes(req({ includedResources: ['*'] }), DISCOVERED)).toEqual([]);
    expect(unservedIncludes(req({}), DISCOVERED)).toEqual([]);
  });
});

describe('mayIncludeGroup', () => {
  it('is true unless every include names another group, and false for groups never backed up', () => {
    expect(mayIncludeGroup(req({}), 'example.com')).toBe(true);
    expect(mayIncludeGroup(req({ includedResources: ['*'] }), 'example.com')).toBe(true);
    expect(mayIncludeGroup(req({ includedResources: ['things.x.io', 'cronjobs.batch'] }), 'example.com')).toBe(false);
    expect(mayIncludeGroup(req({ includedResources: ['widgets.example.com'] }), 'example.com')).toBe(true);
    // An entry without a group matches that name in every group.
    expect(mayIncludeGroup(req({ includedResources: ['widgets'] }), 'example.com')).toBe(true);
    expect(mayIncludeGroup(req({}), 'metrics.k8s.io')).toBe(false);
  });
});
