// The lifecycle's status patches against the real apiserver (no Stowage server runs in this
// namespace, so nobody else writes): conditional on the run still being InProgress, re-read on
// Conflict, quiet when the run was deleted or someone else moved its phase on.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { RESOURCES, newRestore, type Restore } from '../../src/apis/v1/index.js';
import type { ControllerContext } from '../../src/controller/run/context.js';
import { failValidation, patchWhileInProgress } from '../../src/controller/run/lifecycle.js';
import { ensureCrds, type DynamicClient } from '../../src/kube/index.js';
import { systemClock } from '../../src/util/clock.js';
import { uniqueName } from '../support/kube.js';
import { ensureNamespace, testClient } from '../support/server.js';

const R = RESOURCES.Restore;

describe('run status patches', () => {
  const ns = uniqueName('stowage-patch');
  let client: DynamicClient;
  let ctx: ControllerContext;
  const events: string[] = [];

  beforeAll(async () => {
    client = testClient(inject('cluster').kubeconfigPath);
    await ensureCrds(client);
    await ensureNamespace(client, ns);
    const quiet = { warn: () => undefined, info: () => undefined, error: () => undefined, debug: () => undefined };
    // Only what the two functions read: the client, the namespace, the clock, events and the logger.
    ctx = { client, namespace: ns, clock: systemClock, logger: quiet, events: { event: (_o: unknown, _t: string, reason: string) => void events.push(reason) } } as unknown as ControllerContext;
  });

  afterAll(() => client?.close());

  async function inProgress(name: string): Promise<Restore> {
    const r = await client.create<Restore>(R, ns, newRestore(name, ns, { backupName: 'b' }));
    return client.patchStatus<Restore>(R, ns, name, { metadata: { resourceVersion: r.metadata.resourceVersion }, status: { phase: 'InProgress' } });
  }

  it('applies while InProgress even after another writer bumped the version', async () => {
    const r = await inProgress('bumped');
    await client.patch(R, ns, 'bumped', { metadata: { labels: { touched: 'yes' } } }, 'merge');
    const version = { rv: r.metadata.resourceVersion };
    expect(await patchWhileInProgress(ctx, R, r, version, { phase: 'Completed' })).toBe(true);
    const now = await client.get<Restore>(R, ns, 'bumped');
    expect(now.status?.phase).toBe('Completed');
    expect(version.rv).toBe(now.metadata.resourceVersion);
  });

  it('never overwrites a phase someone else moved on, and ends quietly for a deleted run', async () => {
    const r = await inProgress('moved');
    await client.patchStatus(R, ns, 'moved', { status: { phase: 'Failed', failureReason: 'marked by another server' } });
    expect(await patchWhileInProgress(ctx, R, r, { rv: r.metadata.resourceVersion }, { phase: 'Completed' })).toBe(false);
    expect((await client.get<Restore>(R, ns, 'moved')).status).toMatchObject({ phase: 'Failed', failureReason: 'marked by another server' });

    const gone = await inProgress('gone');
    await client.delete(R, ns, 'gone');
    expect(await patchWhileInProgress(ctx, R, gone, { rv: gone.metadata.resourceVersion }, { phase: 'Completed' })).toBe(false);
  });

  it('FailedValidation applies only to the version validated, and tolerates a deleted run', async () => {
    const validated = await client.create<Restore>(R, ns, newRestore('edited', ns, { backupName: 'b' }));
    await client.patch(R, ns, 'edited', { spec: { backupName: 'fixed' } }, 'merge');
    let recorded = 0;
    await failValidation(ctx, 'restore', R, validated, ['backup "b" does not exist'], () => recorded++);
    expect((await client.get<Restore>(R, ns, 'edited')).status?.phase).toBeUndefined();
    expect(recorded).toBe(0);

    const fresh = await client.get<Restore>(R, ns, 'edited');
    await failValidation(ctx, 'restore', R, fresh, ['backup "fixed" does not exist'], () => recorded++);
    expect((await client.get<Restore>(R, ns, 'edited')).status).toMatchObject({ phase: 'FailedValidation', validationErrors: ['backup "fixed" does not exist'] });
    expect(recorded).toBe(1);
    expect(events).toEqual(['FailedValidation']);

    await client.delete(R, ns, 'edited');
    await expect(failValidation(ctx, 'restore', R, fresh, ['x'], () => recorded++)).resolves.toBeUndefined();
    expect(recorded).toBe(1);
  });
});
