import { describe, expect, it } from 'vitest';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, formatRequester, sealRefusal, sealStamp, type Requester, type ResourceAccess } from '../auth/index.js';
import { admit, impersonationNeeded, type MayImpersonate, type Sealer } from './admission.js';

const alice: Requester = { username: 'alice', uid: 'alice-uid', groups: ['team-a', 'system:authenticated'] };
const admin: Requester = { username: 'admin', uid: '', groups: ['system:masters', 'system:authenticated'] };

function review(o: {
  operation?: string; resource?: string; group?: string; user?: Requester | null; object?: unknown; oldObject?: unknown; uid?: string; subResource?: string;
}): unknown {
  return {
    apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview',
    request: {
      uid: o.uid ?? 'req-1', operation: o.operation ?? 'CREATE', namespace: 'stowage', name: 'b1',
      kind: { group: 'stowage.dev', version: 'v1', kind: 'Backup' },
      resource: { group: o.group ?? 'stowage.dev', version: 'v1', resource: o.resource ?? 'backups' },
      ...(o.subResource !== undefined ? { subResource: o.subResource } : {}),
      ...(o.user !== null ? { userInfo: o.user ?? alice } : {}),
      object: o.object ?? { apiVersion: 'stowage.dev/v1', kind: 'Backup', metadata: { name: 'b1', namespace: 'stowage' } },
      ...(o.oldObject !== undefined ? { oldObject: o.oldObject } : {}),
    },
  };
}

const withStamp = (r: Requester | string, extra: Record<string, string> = {}): unknown => ({
  metadata: { name: 'b1', namespace: 'stowage', annotations: { ...extra, [REQUESTER_ANNOTATION]: typeof r === 'string' ? r : formatRequester(r) } },
});

const SEALER: Sealer = { key: Buffer.alloc(32, 7), now: () => new Date('2026-01-02T03:04:05.000Z') };
const NOW = '2026-01-02T03:04:05.000Z';
/** The seal the webhook should write for a stamp on `kind` `name` in namespace stowage. */
const sealOf = (kind: string, name: string, r: Requester, at = NOW): string => sealStamp(SEALER.key, { kind, namespace: 'stowage', name, stamp: formatRequester(r) }, new Date(at));
const never: MayImpersonate = () => Promise.reject(new Error('not asked'));
const decodePatch = (p: string | undefined): unknown => JSON.parse(Buffer.from(p ?? '', 'base64').toString('utf8'));

describe('admit', () => {
  it('stamps a create without annotations, adding the annotations map', async () => {
    const out = await admit(review({}), never, SEALER);
    expect(out.review).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'req-1', allowed: true, patchType: 'JSONPatch' } });
    expect(decodePatch(out.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations', value: { [REQUESTER_ANNOTATION]: formatRequester(alice), [SEAL_ANNOTATION]: sealOf('Backup', 'b1', alice) } }]);
    expect(out.stamped).toEqual(alice);
    expect(out.refusal).toBeUndefined();
  });

  it('stamps a create with other annotations, escaping / in the patch path', async () => {
    const out = await admit(review({ resource: 'restores', object: { metadata: { name: 'r', annotations: { note: 'x' } } } }), never, SEALER);
    expect(decodePatch(out.review.response.patch)).toEqual([
      { op: 'add', path: '/metadata/annotations/stowage.dev~1requester', value: formatRequester(alice) },
      { op: 'add', path: '/metadata/annotations/stowage.dev~1requester-seal', value: sealOf('Restore', 'r', alice) },
    ]);
  });

  it('names an object given only generateName, and seals the stamp for that name', async () => {
    const out = await admit(review({ object: { kind: 'Backup', metadata: { generateName: 'nightly-', namespace: 'stowage' } } }), never, SEALER);
    const [nameOp, annotationsOp] = decodePatch(out.review.response.patch) as [{ path: string; value: string }, { value: Record<string, string> }];
    expect(nameOp.path).toBe('/metadata/name');
    expect(nameOp.value).toMatch(/^nightly-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    expect(annotationsOp.value[SEAL_ANNOTATION]).toBe(sealOf('Backup', nameOp.value, alice));
    const created = { kind: 'Backup', metadata: { name: nameOp.value, namespace: 'stowage', creationTimestamp: '2026-01-02T03:04:06Z', annotations: annotationsOp.value } };
    expect(sealRefusal(SEALER.key, created)).toBeUndefined();
  });

  it('stamps every kind it handles and only those', async () => {
    for (const resource of ['backups', 'restores', 'downloadrequests', 'deletebackuprequests', 'schedules']) {
      expect((await admit(review({ resource }), never, SEALER)).review.response.allowed, resource).toBe(true);
    }
    const other = await admit(review({ resource: 'backupstoragelocations' }), never, SEALER);
    expect(other.review.response).toMatchObject({ allowed: false, status: { code: 403 } });
    expect(other.review.response.status?.message).toContain('handles only backups, restores, downloadrequests, deletebackuprequests, schedules of stowage.dev, not backupstoragelocations of stowage.dev');
    const status = await admit(review({ subResource: 'status' }), never, SEALER);
    expect(status.review.response.allowed).toBe(false);
    expect(status.review.response.status?.message).toContain('not backups/status of stowage.dev');
  });

  it('allows a create already carrying the requester\'s own stamp unchanged', async () => {
    const out = await admit(review({ object: withStamp(alice, { [SEAL_ANNOTATION]: 'v1 2020-01-01T00:00:00.000Z copied' }) }), never, SEALER);
    // Sealed anew: a seal the request carried (copied from elsewhere) is replaced.
    expect(decodePatch(out.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations/stowage.dev~1requester-seal', value: sealOf('Backup', 'b1', alice) }]);
  });

  it('refuses a stamp naming someone else unless the user may impersonate them', async () => {
    const asked: ResourceAccess[] = [];
    const no: MayImpersonate = (u, a) => {
      expect(u).toEqual(alice);
      asked.push(a);
      return Promise.resolve(a.resource === 'groups');
    };
    const out = await admit(review({ object: withStamp(admin) }), no, SEALER);
    expect(out.review.response).toEqual({
      uid: 'req-1', allowed: false,
      status: { code: 403, reason: 'Forbidden', message: 'the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "admin")' },
    });
    expect(out.refusal).toEqual({ operation: 'CREATE', what: 'Backup stowage/b1', user: 'alice', reason: out.review.response.status?.message });
    expect(asked).toEqual(impersonationNeeded(admin));
  });

  it('allows a stamp naming someone else when every impersonation is allowed (the server passing a Schedule\'s creator on)', async () => {
    const out = await admit(review({ user: admin, object: withStamp(alice) }), () => Promise.resolve(true), SEALER);
    expect(decodePatch(out.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations/stowage.dev~1requester-seal', value: sealOf('Backup', 'b1', alice) }]);
  });

  it('fails closed when the impersonation question cannot be answered', async () => {
    const out = await admit(review({ user: admin, object: withStamp(alice) }), () => Promise.reject(new Error('connection refused')), SEALER);
    expect(out.review.response.allowed).toBe(false);
    expect(out.review.response.status?.message).toBe('the stowage.dev/requester annotation records who created this Backup, and whether user "admin" may set it to "alice" could not be checked: connection refused');
  });

  it('refuses an unreadable stamp on create', async () => {
    const out = await admit(review({ object: withStamp('{not json') }), never, SEALER);
    expect(out.review.response.status?.message).toBe('the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: the stowage.dev/requester annotation is not JSON');
  });

  it('refuses changing or removing the stamp on update, by anyone', async () => {
    const changed = await admit(review({ operation: 'UPDATE', user: admin, oldObject: withStamp(alice), object: withStamp(admin) }), () => Promise.resolve(true), SEALER);
    expect(changed.review.response.status?.message).toBe('the stowage.dev/requester annotation records who created this Backup and cannot be changed or removed: user "admin" tried to change it');
    const removed = await admit(review({ operation: 'UPDATE', oldObject: withStamp(alice), object: { metadata: { name: 'b1', annotations: {} } } }), never, SEALER);
    expect(removed.review.response.status?.message).toBe('the stowage.dev/requester annotation records who created this Backup and cannot be changed or removed: user "alice" tried to remove it');
    expect(removed.refusal?.operation).toBe('UPDATE');
  });

  it('allows an update that keeps the stamp, whoever makes it', async () => {
    const out = await admit(review({ operation: 'UPDATE', user: admin, oldObject: withStamp(alice), object: withStamp(alice, { other: 'y' }) }), never, SEALER);
    expect(out.review.response).toEqual({ uid: 'req-1', allowed: true });
  });

  it('treats a stamp added to an unstamped object like one set on create, and does not stamp plain updates', async () => {
    const plain = await admit(review({ operation: 'UPDATE', oldObject: { metadata: { name: 'b1' } } }), never, SEALER);
    expect(plain.review.response).toEqual({ uid: 'req-1', allowed: true });
    const forged = await admit(review({ operation: 'UPDATE', oldObject: { metadata: { name: 'b1' } }, object: withStamp(admin) }), () => Promise.resolve(false), SEALER);
    expect(forged.review.response.status?.message).toBe('the stowage.dev/requester annotation records who created this Backup and is set only by the Stowage admission webhook: user "alice" may not set it (it names "admin")');
    const noTime = await admit(review({ operation: 'UPDATE', oldObject: { metadata: { name: 'b1' } }, object: withStamp(alice) }), never, SEALER);
    expect(noTime.review.response.status?.message).toBe('the admission request for this UPDATE of a Backup carries an old object without a creationTimestamp to seal the stamp for');
    const created = '2025-12-31T00:00:00Z';
    const own = await admit(review({ operation: 'UPDATE', oldObject: { metadata: { name: 'b1', creationTimestamp: created } }, object: withStamp(alice) }), never, SEALER);
    // Sealed for the time the object was created, which is what the server checks the seal against.
    expect(decodePatch(own.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations/stowage.dev~1requester-seal', value: sealOf('Backup', 'b1', alice, '2025-12-31T00:00:00.000Z') }]);
  });

  it('refuses changing, removing or setting the seal on update, by anyone', async () => {
    const sealed = { metadata: { name: 'b1', creationTimestamp: NOW, annotations: { [REQUESTER_ANNOTATION]: formatRequester(alice), [SEAL_ANNOTATION]: sealOf('Backup', 'b1', alice) } } };
    const changed = await admit(review({ operation: 'UPDATE', user: admin, oldObject: sealed, object: withStamp(alice, { [SEAL_ANNOTATION]: 'v1 x y' }) }), never, SEALER);
    expect(changed.review.response.status?.message).toBe('the stowage.dev/requester-seal annotation proves who created this Backup and is set only by the Stowage admission webhook: user "admin" tried to change it');
    const removed = await admit(review({ operation: 'UPDATE', oldObject: sealed, object: withStamp(alice) }), never, SEALER);
    expect(removed.review.response.status?.message).toBe('the stowage.dev/requester-seal annotation proves who created this Backup and is set only by the Stowage admission webhook: user "alice" tried to remove it');
    const alone = await admit(review({ operation: 'UPDATE', oldObject: { metadata: { name: 'b1' } }, object: { metadata: { name: 'b1', annotations: { [SEAL_ANNOTATION]: 'v1 x y' } } } }), never, SEALER);
    expect(alone.review.response.status?.message).toBe('the stowage.dev/requester-seal annotation is set only by the Stowage admission webhook, with the stowage.dev/requester annotation: user "alice" tried to set it alone');
    const kept = await admit(review({ operation: 'UPDATE', oldObject: sealed, object: sealed }), never, SEALER);
    expect(kept.review.response).toEqual({ uid: 'req-1', allowed: true });
  });

  it('refuses unreadable requests with the reason', async () => {
    for (const [body, reason] of [
      [null, 'the admission request is unreadable: it is not an AdmissionReview with a request uid'],
      [{ request: { operation: 'CREATE' } }, 'the admission request is unreadable: it is not an AdmissionReview with a request uid'],
      [review({ user: null }), 'the admission request names no user'],
      [review({ operation: 'DELETE' }), 'the Stowage admission webhook handles CREATE and UPDATE, not DELETE'],
      [review({ operation: 'UPDATE' }), 'the admission request for this UPDATE of a Backup carries no old object'],
    ] as const) {
      const out = await admit(body, never, SEALER);
      expect(out.review.response.allowed).toBe(false);
      expect(out.review.response.status?.message).toBe(reason);
    }
  });
});

describe('impersonationNeeded', () => {
  it('asks for users, every group and the uid', () => {
    expect(impersonationNeeded(alice)).toEqual([
      { verb: 'impersonate', group: '', resource: 'users', name: 'alice' },
      { verb: 'impersonate', group: '', resource: 'groups', name: 'team-a' },
      { verb: 'impersonate', group: '', resource: 'groups', name: 'system:authenticated' },
      { verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: 'alice-uid' },
    ]);
  });

  it('asks for the service account in its namespace for service account users', () => {
    expect(impersonationNeeded({ username: 'system:serviceaccount:team-a:ci', uid: '', groups: [] })).toEqual([
      { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'team-a', name: 'ci' },
    ]);
  });
});

describe('admit: spec.cancel', () => {
  const run = (o: { cancel?: boolean; phase?: string; canceledBy?: string; stamp?: Requester }): unknown => ({
    metadata: {
      name: 'b1', namespace: 'stowage',
      annotations: { [REQUESTER_ANNOTATION]: formatRequester(o.stamp ?? alice), ...(o.canceledBy !== undefined ? { 'stowage.dev/canceled-by': o.canceledBy } : {}) },
    },
    spec: o.cancel === undefined ? {} : { cancel: o.cancel },
    ...(o.phase !== undefined ? { status: { phase: o.phase } } : {}),
  });

  it('records who turned cancel on, for backups and restores', async () => {
    for (const resource of ['backups', 'restores']) {
      const out = await admit(review({ operation: 'UPDATE', resource, user: admin, oldObject: run({ phase: 'InProgress' }), object: run({ cancel: true, phase: 'InProgress' }) }), never, SEALER);
      expect(out.review.response.allowed, resource).toBe(true);
      expect(decodePatch(out.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations/stowage.dev~1canceled-by', value: 'admin' }]);
    }
  });

  it('records the creator of a run created canceled, after the stamp', async () => {
    const out = await admit(review({ object: { metadata: { name: 'b1', namespace: 'stowage' }, spec: { cancel: true } } }), never, SEALER);
    expect(decodePatch(out.review.response.patch)).toEqual([
      { op: 'add', path: '/metadata/annotations', value: { [REQUESTER_ANNOTATION]: formatRequester(alice), [SEAL_ANNOTATION]: sealOf('Backup', 'b1', alice) } },
      { op: 'add', path: '/metadata/annotations/stowage.dev~1canceled-by', value: 'alice' },
    ]);
  });

  it('overwrites a canceled-by the user wrote with the cancel, and refuses one written otherwise', async () => {
    const forged = await admit(review({ operation: 'UPDATE', oldObject: run({ phase: 'New' }), object: run({ cancel: true, canceledBy: 'admin' }) }), never, SEALER);
    expect(decodePatch(forged.review.response.patch)).toEqual([{ op: 'add', path: '/metadata/annotations/stowage.dev~1canceled-by', value: 'alice' }]);
    const changed = await admit(review({ operation: 'UPDATE', oldObject: run({ cancel: true, canceledBy: 'alice' }), object: run({ cancel: true, canceledBy: 'bob' }) }), never, SEALER);
    expect(changed.review.response.allowed).toBe(false);
    expect(changed.review.response.status?.message).toBe('the stowage.dev/canceled-by annotation records who canceled this Backup and is set only by the Stowage admission webhook, when spec.cancel turns true');
  });

  it('refuses to cancel a finished run, and leaves a repeated or withdrawn cancel alone', async () => {
    for (const phase of ['Completed', 'PartiallyFailed', 'Failed', 'FailedValidation', 'Canceled', 'Deleting']) {
      const out = await admit(review({ operation: 'UPDATE', oldObject: run({ phase }), object: run({ cancel: true, phase }) }), never, SEALER);
      expect(out.review.response.allowed, phase).toBe(false);
      expect(out.review.response.status?.message).toBe(`Backup is already ${phase}: only a New or InProgress backup can be canceled`);
    }
    const again = await admit(review({ operation: 'UPDATE', oldObject: run({ cancel: true, canceledBy: 'alice', phase: 'Canceled' }), object: run({ cancel: true, canceledBy: 'alice', phase: 'Canceled' }) }), never, SEALER);
    expect(again.review.response).toEqual({ uid: 'req-1', allowed: true });
    const withdrawn = await admit(review({ operation: 'UPDATE', oldObject: run({ cancel: true, canceledBy: 'alice' }), object: run({ cancel: false, canceledBy: 'alice' }) }), never, SEALER);
    expect(withdrawn.review.response).toEqual({ uid: 'req-1', allowed: true });
  });

  it('ignores cancel on the kinds that have none', async () => {
    const out = await admit(review({ operation: 'UPDATE', resource: 'schedules', oldObject: run({}), object: run({ cancel: true }) }), never, SEALER);
    expect(out.review.response).toEqual({ uid: 'req-1', allowed: true });
  });
});
