import { describe, expect, it } from 'vitest';
import winston from 'winston';
import { newBackup } from '../apis/v1/index.js';
import type { TarballWriter } from '../archive/index.js';
import { KubeError, type ApiResource, type DynamicClient } from '../kube/index.js';
import { collectUnit, madeByRun, orderItems, prefetched, type CollectContext } from './collect.js';
import { newBackupRequest } from './request.js';

const WIDGETS: ApiResource = {
  group: 'example.com', version: 'v1', resource: 'widgets', kind: 'Widget', namespaced: true, verbs: ['list', 'get', 'create'],
  groupResource: 'widgets.example.com', apiVersion: 'example.com/v1', shortNames: [], singularName: 'widget',
};

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

describe('collectUnit when a LIST fails', () => {
  // A client that fails every LIST with `err` and answers serves() with `served`: only the decision is under test.
  const run = async (err: KubeError, served: boolean | Error) => {
    const client = {
      // eslint-disable-next-line require-yield -- fails before its first page, like a refused LIST
      async *listPages(): AsyncGenerator<never> {
        throw err;
      },
      serves: async () => {
        if (served instanceof Error) throw served;
        return served;
      },
    } as unknown as DynamicClient;
    const req = newBackupRequest(newBackup('b', 'stowage', { includedNamespaces: ['ns'] }));
    const ctx: CollectContext = {
      req, client, writer: {} as TarballWriter, actions: [], byGroupResource: new Map(), log: winston.createLogger({ silent: true }),
      pageSize: 10, signal: new AbortController().signal,
    };
    await collectUnit(ctx, { res: WIDGETS, namespace: 'ns', selector: '' });
    return req;
  };
  const notFound = new KubeError({ verb: 'list', resource: 'widgets.example.com' }, 404, 'NotFound', 'the server could not find the requested resource');

  it('warns when a fresh look at the group version confirms the resource is gone', async () => {
    const req = await run(notFound, false);
    expect(req.results.warnings.namespaces.ns).toEqual(['widgets.example.com is no longer served (removed after discovery); none backed up in namespace "ns"']);
    expect(req.results.errors.namespaces.ns).toBeUndefined();
  });

  it('is an error when discovery still lists the resource, or cannot say', async () => {
    const still = await run(notFound, true);
    expect(still.results.errors.namespaces.ns).toEqual([
      `listing widgets.example.com in namespace "ns" at example.com/v1 failed: ${notFound.message}, though discovery still lists widgets.example.com at example.com/v1`,
    ]);
    expect(still.records.get('widgets.example.com')?.error).toMatch(/^listing widgets.example.com .* still lists/);
    const unknown = await run(notFound, new Error('connection refused'));
    expect(unknown.results.errors.namespaces.ns?.[0]).toMatch(/and checking whether it is still served failed: connection refused$/);
  });

  it('lists once more, a moment later, when a 404 comes for a resource discovery still lists (a CRD mid-deletion or mid-creation)', async () => {
    let lists = 0;
    const client = {
      async *listPages(): AsyncGenerator<{ items: never[]; resourceVersion: string }> {
        lists++;
        if (lists === 1) throw notFound;
        yield { items: [], resourceVersion: '1' };
      },
      serves: async () => true,
    } as unknown as DynamicClient;
    const req = newBackupRequest(newBackup('b', 'stowage', { includedNamespaces: ['ns'] }));
    const ctx: CollectContext = {
      req, client, writer: {} as TarballWriter, actions: [], byGroupResource: new Map(), log: winston.createLogger({ silent: true }),
      pageSize: 10, signal: new AbortController().signal,
    };
    const t0 = Date.now();
    await collectUnit(ctx, { res: WIDGETS, namespace: 'ns', selector: '' });
    expect(lists).toBe(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(req.results.errors.namespaces.ns).toBeUndefined();
    expect(req.results.warnings.namespaces.ns).toBeUndefined();
    expect(req.records.get('widgets.example.com')).toEqual({ groupResource: 'widgets.example.com', apiVersion: 'example.com/v1', listed: 0, written: 0 });
  });

  it('is an error naming the resource and why for any other failure (403, 5xx)', async () => {
    const err = new KubeError({ verb: 'list', resource: 'widgets.example.com' }, 500, 'InternalError', 'conversion webhook for example.com/v1, Kind=Widget failed');
    const req = await run(err, false);
    const why = `listing widgets.example.com in namespace "ns" at example.com/v1 failed: ${err.message}`;
    expect(why).toContain('conversion webhook for example.com/v1, Kind=Widget failed');
    expect(req.results.errors.namespaces.ns).toEqual([why]);
    expect(req.records.get('widgets.example.com')).toEqual({ groupResource: 'widgets.example.com', apiVersion: 'example.com/v1', listed: 0, written: 0, error: why });
  });
});

describe('madeByRun', () => {
  const vs = { groupResource: 'volumesnapshots.snapshot.storage.k8s.io' };
  const vsc = { groupResource: 'volumesnapshotcontents.snapshot.storage.k8s.io' };
  const labelled = (uid: string) => ({ metadata: { name: 'data-0-abc', labels: { 'stowage.dev/snapshot-of-backup-uid': uid } } });

  it('leaves out of the LISTs the VolumeSnapshots and contents this backup is making (its claims store them once ready)', () => {
    expect(madeByRun('uid-1', vs, labelled('uid-1'))).toBe(true);
    expect(madeByRun('uid-1', vsc, labelled('uid-1'))).toBe(true);
  });

  it('keeps those of other backups, unlabelled ones, other resources, and everything when the backup has no uid', () => {
    expect(madeByRun('uid-1', vs, labelled('uid-2'))).toBe(false);
    expect(madeByRun('uid-1', vs, { metadata: { name: 'mine' } })).toBe(false);
    expect(madeByRun('uid-1', { groupResource: 'configmaps' }, labelled('uid-1'))).toBe(false);
    expect(madeByRun(undefined, vs, labelled(''))).toBe(false);
    expect(madeByRun('', vs, labelled(''))).toBe(false);
  });
});
