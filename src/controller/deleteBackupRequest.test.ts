import { describe, expect, it } from 'vitest';
import { newBackup, newBackupStorageLocation, type Backup, type BackupPhase, type BackupStorageLocation } from '../apis/v1/index.js';
import type { DeleteItemAction, KubeObject, ResourceSelector } from '../plugin/api/index.js';
import { deletionRefusal, runDeleteItemActions, type DeletionItem } from './deleteBackupRequest.js';

type TestItem = DeletionItem & { object: KubeObject };

function item(groupResource: string, namespace: string | undefined, name: string, labels?: Record<string, string>): TestItem {
  const object: KubeObject = {
    apiVersion: 'v1',
    kind: 'Thing',
    metadata: { name, ...(namespace !== undefined ? { namespace } : {}), ...(labels !== undefined ? { labels } : {}) },
  };
  return { groupResource, name, picked: labels, object, ...(namespace !== undefined ? { namespace } : {}) };
}

/** Objects are read only for the items an action takes; `loaded` records which. */
const loaded: string[] = [];
const load = async (it: TestItem): Promise<KubeObject> => {
  loaded.push(it.name);
  return it.object;
};

const ALL: ResourceSelector = { includedNamespaces: [], excludedNamespaces: [], includedResources: [], excludedResources: [], labelSelector: '' };

/** A real DeleteItemAction implementation that records what it was called with. */
function recordingAction(selector: Partial<ResourceSelector>, fail?: (item: KubeObject) => string | undefined): { action: DeleteItemAction; seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    action: {
      appliesTo: async () => ({ ...ALL, ...selector }),
      execute: async ({ item: it, backup }) => {
        seen.push(`${it.metadata.namespace ?? ''}/${it.metadata.name}@${backup.metadata.name}`);
        const msg = fail?.(it);
        if (msg !== undefined) throw new Error(msg);
      },
    },
  };
}

const items = [
  item('configmaps', 'shop', 'a', { app: 'web' }),
  item('configmaps', 'shop', 'b', { app: 'db' }),
  item('secrets', 'shop', 's'),
  item('configmaps', 'other', 'c', { app: 'web' }),
  item('persistentvolumes', undefined, 'pv-1', { app: 'web' }),
  item('deployments.apps', 'shop', 'web', { app: 'web' }),
];
const backup = newBackup('b1', 'stowage');

describe('runDeleteItemActions', () => {
  it('runs each action on exactly the items its AppliesTo selects', async () => {
    const all = recordingAction({});
    const cms = recordingAction({ includedResources: ['configmaps'], includedNamespaces: ['shop'] });
    const web = recordingAction({ labelSelector: 'app=web', excludedResources: ['deployments.apps'] });
    const nsOnly = recordingAction({ excludedNamespaces: ['other'] });
    const errors = await runDeleteItemActions(
      [{ name: 'x/all', action: all.action }, { name: 'x/cms', action: cms.action }, { name: 'x/web', action: web.action }, { name: 'x/ns', action: nsOnly.action }],
      items,
      load,
      backup,
    );
    expect(errors).toEqual([]);
    expect(all.seen).toEqual(['shop/a@b1', 'shop/b@b1', 'shop/s@b1', 'other/c@b1', '/pv-1@b1', 'shop/web@b1']);
    expect(cms.seen).toEqual(['shop/a@b1', 'shop/b@b1']);
    expect(web.seen).toEqual(['shop/a@b1', 'other/c@b1', '/pv-1@b1']);
    // A namespace restriction (even exclude-only) leaves cluster-scoped items out.
    expect(nsOnly.seen).toEqual(['shop/a@b1', 'shop/b@b1', 'shop/s@b1', 'shop/web@b1']);
  });

  it('reports each failure precisely and carries on', async () => {
    const flaky = recordingAction({ includedResources: ['configmaps'] }, (it) => (it.metadata.name === 'b' ? 'snapshot snap-123 is locked' : undefined));
    const broken: DeleteItemAction = {
      appliesTo: async () => {
        throw new Error('plugin exited');
      },
      execute: async () => undefined,
    };
    const badSelector = recordingAction({ labelSelector: 'app in (' });
    const errors = await runDeleteItemActions(
      [{ name: 'x/flaky', action: flaky.action }, { name: 'x/broken', action: broken }, { name: 'x/bad', action: badSelector.action }],
      items,
      load,
      backup,
    );
    expect(errors).toHaveLength(3);
    expect(errors[0]).toBe('DeleteItemAction x/flaky on configmaps shop/b: snapshot snap-123 is locked');
    expect(errors[1]).toBe('DeleteItemAction x/broken: AppliesTo failed: plugin exited');
    expect(errors[2]).toMatch(/^DeleteItemAction x\/bad: AppliesTo failed: /);
    expect(flaky.seen).toEqual(['shop/a@b1', 'shop/b@b1', 'other/c@b1']);
    expect(badSelector.seen).toEqual([]);
  });

  it('reads an object only when an action takes it, and reports a failed read like a failed action', async () => {
    loaded.length = 0;
    const cms = recordingAction({ includedResources: ['configmaps'], labelSelector: 'app=web' });
    const failingLoad = async (it: TestItem): Promise<KubeObject> => {
      if (it.name === 'c') throw new Error('the spill file is closed');
      return load(it);
    };
    const errors = await runDeleteItemActions([{ name: 'x/cms', action: cms.action }], items, failingLoad, backup);
    expect(loaded).toEqual(['a']);
    expect(cms.seen).toEqual(['shop/a@b1']);
    expect(errors).toEqual(['DeleteItemAction x/cms on configmaps other/c: the spill file is closed']);
  });
});

describe('deletionRefusal', () => {
  const loc = (name: string, extra: Partial<BackupStorageLocation['spec']> = {}, phase: 'Available' | 'Unavailable' = 'Available'): BackupStorageLocation => {
    const l = newBackupStorageLocation(name, 'stowage', { provider: 'stowage.dev/filesystem', objectStorage: { bucket: 'b' }, ...extra });
    l.status = { phase };
    return l;
  };
  const withPhase = (phase: BackupPhase | undefined, location = 'default'): Backup => {
    const b = newBackup('b1', 'stowage', { storageLocation: location });
    if (phase !== undefined) b.status = { phase };
    return b;
  };

  it('refuses a backup that is still running', () => {
    expect(deletionRefusal(withPhase(undefined), [loc('default')], '')).toBe('backup "b1" is still New; delete it once it has finished');
    expect(deletionRefusal(withPhase('InProgress'), [loc('default')], '')).toBe('backup "b1" is still InProgress; delete it once it has finished');
  });

  it('refuses ReadOnly, Unavailable and missing locations with a clear reason', () => {
    expect(deletionRefusal(withPhase('Completed', 'ro'), [loc('ro', { accessMode: 'ReadOnly' })], '')).toBe(
      'backup storage location "ro" is ReadOnly, so its backups cannot be deleted',
    );
    expect(deletionRefusal(withPhase('Completed', 'down'), [loc('down', {}, 'Unavailable')], '')).toBe('backup storage location "down" is Unavailable');
    expect(deletionRefusal(withPhase('Failed', 'gone'), [], '')).toBe('backup storage location "gone" does not exist');
  });

  it('allows finished backups; one that failed validation needs no location at all', () => {
    for (const phase of ['Completed', 'PartiallyFailed', 'Failed', 'Deleting'] as const) {
      expect(deletionRefusal(withPhase(phase), [loc('default')], '')).toBeUndefined();
    }
    expect(deletionRefusal(withPhase('FailedValidation', 'nowhere'), [], '')).toBeUndefined();
  });
});
