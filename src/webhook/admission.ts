// The admission decision over one AdmissionReview (admission.k8s.io/v1): stamp the requester on
// create, refuse anyone else setting or changing the stamp. Pure apart from the impersonation
// question, which the caller answers (server.ts asks the API server with SubjectAccessReviews).
// Every stamp that goes through is sealed (auth/seal.ts) for the object's kind, namespace and name,
// so the server can tell it from one written while this webhook did not see the object; an object
// created with only generateName gets its name here, since the seal needs it.
import crypto from 'node:crypto';
import { ANNOTATION_CANCELED_BY, GROUP, RESOURCES } from '../apis/v1/index.js';
import { errorMessage } from '../util/errors.js';
import { REQUESTER_ANNOTATION, SEAL_ANNOTATION, formatRequester, parseRequester, sameRequester, sealStamp, type Requester, type ResourceAccess } from '../auth/index.js';
import { cancelAdmission } from './cancel.js';

/** The kinds the webhook stamps (plural resource names), with the Kind for messages. */
export const STAMPED_RESOURCES: ReadonlyMap<string, string> = new Map(
  [RESOURCES.Backup, RESOURCES.Restore, RESOURCES.DownloadRequest, RESOURCES.DeleteBackupRequest, RESOURCES.Schedule].map((r) => [r.resource, r.kind]),
);

/**
 * Whether `user` (who sent the admission request) may impersonate what `access` names
 * (verb impersonate on users/groups/serviceaccounts/uids).
 */
export type MayImpersonate = (user: Requester, access: ResourceAccess) => Promise<boolean>;

/** What the webhook seals stamps with: the key from its TLS Secret, and its clock. */
export interface Sealer { key: Buffer; now: () => Date }

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; message: string; reason?: string };
  patchType?: 'JSONPatch';
  /** base64 of the JSON Patch. */
  patch?: string;
}

export interface AdmissionOutcome {
  /** The AdmissionReview to send back. */
  review: { apiVersion: 'admission.k8s.io/v1'; kind: 'AdmissionReview'; response: AdmissionResponse };
  /** For the server log: set when the request was refused. No object contents. */
  refusal?: { operation: string; what: string; user: string; reason: string };
  /** The stamp added, when one was. */
  stamped?: Requester;
}

interface Meta { name?: string; generateName?: string; namespace?: string; creationTimestamp?: unknown; annotations?: Record<string, unknown> }
type ObjectLike = { metadata?: Meta } | null | undefined;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The user of the admission request, as the stamp records it. */
function userOf(userInfo: unknown): Requester | undefined {
  if (!isRecord(userInfo) || typeof userInfo.username !== 'string' || userInfo.username === '') return undefined;
  const uid = typeof userInfo.uid === 'string' ? userInfo.uid : '';
  const groups = Array.isArray(userInfo.groups) ? userInfo.groups.filter((g): g is string => typeof g === 'string') : [];
  return { username: userInfo.username, uid, groups };
}

/** The impersonation rights that setting `stamped` needs, as SubjectAccessReview attributes. */
export function impersonationNeeded(stamped: Requester): ResourceAccess[] {
  const sa = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(stamped.username);
  const out: ResourceAccess[] = [
    sa !== null
      ? { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: sa[1], name: sa[2] }
      : { verb: 'impersonate', group: '', resource: 'users', name: stamped.username },
  ];
  for (const g of stamped.groups) out.push({ verb: 'impersonate', group: '', resource: 'groups', name: g });
  // Impersonate-Uid (Kubernetes 1.22+) needs `impersonate uids`; asked on older API servers too,
  // where RBAC can grant it all the same, so a stamped uid is never passed on unchecked.
  if (stamped.uid !== '') out.push({ verb: 'impersonate', group: 'authentication.k8s.io', resource: 'uids', name: stamped.uid });
  return out;
}

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
/** JSON Pointer escaping (RFC 6901): `~` first, then `/`. */
const pointerEscape = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Lowercase consonants and digits, as the API server's own generateName suffixes use. */
const NAME_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** `generateName` plus five random characters, the base cut to 58 as the API server cuts it. */
function generatedName(base: string): string {
  let suffix = '';
  for (const b of crypto.randomBytes(5)) suffix += NAME_ALPHABET[b % NAME_ALPHABET.length] ?? 'x';
  return `${base.slice(0, 58)}${suffix}`;
}

/**
 * The ops that leave `stamp` sealed on the object: the name when only generateName is given, the
 * stamp when `setStamp`, and the seal over both (replacing any seal the request carried).
 */
function sealOps(kind: string, namespace: string, obj: { metadata?: Meta }, stamp: string, setStamp: boolean, sealedAt: Date, sealer: Sealer): object[] {
  const ops: object[] = [];
  let name = obj.metadata?.name ?? '';
  if (name === '') {
    name = generatedName(obj.metadata?.generateName ?? '');
    ops.push({ op: 'add', path: '/metadata/name', value: name });
  }
  const seal = sealStamp(sealer.key, { kind, namespace, name, stamp }, sealedAt);
  const set: Record<string, string> = setStamp ? { [REQUESTER_ANNOTATION]: stamp, [SEAL_ANNOTATION]: seal } : { [SEAL_ANNOTATION]: seal };
  if (!isRecord(obj.metadata?.annotations)) ops.push({ op: 'add', path: '/metadata/annotations', value: set });
  else for (const [k, v] of Object.entries(set)) ops.push({ op: 'add', path: `/metadata/annotations/${pointerEscape(k)}`, value: v });
  return ops;
}

const rawStamp = (obj: ObjectLike): string | undefined => rawAnnotation(obj, REQUESTER_ANNOTATION);

function rawAnnotation(obj: ObjectLike, key: string): string | undefined {
  const v = obj?.metadata?.annotations?.[key];
  // A non-string annotation does not pass the API server's validation; treat it as a value anyway.
  return v === undefined ? undefined : typeof v === 'string' ? v : JSON.stringify(v);
}

function objectName(obj: ObjectLike, req: Record<string, unknown>): string {
  const ns = typeof req.namespace === 'string' ? req.namespace : obj?.metadata?.namespace ?? '';
  const name = typeof req.name === 'string' && req.name !== '' ? req.name : obj?.metadata?.name ?? (obj?.metadata?.generateName !== undefined ? `${obj.metadata.generateName}*` : '');
  return ns !== '' ? `${ns}/${name}` : name;
}

/**
 * Decides one AdmissionReview. Never throws: an unreadable request, or an impersonation question
 * that cannot be answered, is a refusal naming why (fail closed).
 */
export async function admit(body: unknown, mayImpersonate: MayImpersonate, sealer: Sealer): Promise<AdmissionOutcome> {
  const req = isRecord(body) && isRecord(body.request) ? body.request : undefined;
  const uid = req !== undefined && typeof req.uid === 'string' ? req.uid : '';
  const respond = (allowed: boolean, extra: Partial<AdmissionResponse> = {}): AdmissionOutcome['review'] => ({
    apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed, ...extra },
  });
  const operation = req !== undefined && typeof req.operation === 'string' ? req.operation : '';
  const deny = (what: string, user: string, reason: string): AdmissionOutcome => ({
    review: respond(false, { status: { code: 403, reason: 'Forbidden', message: reason } }),
    refusal: { operation: operation === '' ? '?' : operation, what, user, reason },
  });

  if (req === undefined || uid === '') return deny('?', '?', 'the admission request is unreadable: it is not an AdmissionReview with a request uid');
  const resource = isRecord(req.resource) ? req.resource : {};
  const kind = STAMPED_RESOURCES.get(typeof resource.resource === 'string' ? resource.resource : '');
  const obj = (isRecord(req.object) ? req.object : undefined) as { metadata?: Meta } | undefined;
  const what = `${kind ?? (typeof resource.resource === 'string' ? resource.resource : '?')} ${objectName(obj, req)}`;
  const user = userOf(req.userInfo);
  const userName = user?.username ?? '?';
  if (resource.group !== GROUP || kind === undefined || (typeof req.subResource === 'string' && req.subResource !== '')) {
    return deny(what, userName, `the Stowage admission webhook handles only ${[...STAMPED_RESOURCES.keys()].join(', ')} of ${GROUP}, not ${String(resource.resource)}${typeof req.subResource === 'string' && req.subResource !== '' ? `/${req.subResource}` : ''} of ${String(resource.group)}`);
  }
  if (user === undefined) return deny(what, userName, 'the admission request names no user');
  if (obj === undefined) return deny(what, userName, `the admission request for this ${kind} carries no object`);
  if (operation !== 'CREATE' && operation !== 'UPDATE') return deny(what, userName, `the Stowage admission webhook handles CREATE and UPDATE, not ${operation === '' ? 'an unnamed operation' : operation}`);
  const old = isRecord(req.oldObject) ? (req.oldObject as { metadata?: Meta }) : undefined;
  const cancel = cancelAdmission(kind, obj, old, user.username);
  if ('refused' in cancel) return deny(what, userName, cancel.refused);
  const namespace = typeof req.namespace === 'string' ? req.namespace : obj.metadata?.namespace ?? '';
  const outcome = await decideStamp({ operation, kind, namespace, obj, old, user, mayImpersonate, sealer }, respond, (reason) => deny(what, userName, reason));
  if (!('annotate' in cancel) || !outcome.review.response.allowed) return outcome;
  // After the stamp's ops, which create the annotations map when there was none.
  const prior = outcome.review.response.patch === undefined ? [] : (JSON.parse(Buffer.from(outcome.review.response.patch, 'base64').toString('utf8')) as unknown[]);
  const patch = [...prior, annotationOp(obj, prior.length > 0, ANNOTATION_CANCELED_BY, cancel.annotate)];
  return { ...outcome, review: { ...outcome.review, response: { ...outcome.review.response, patchType: 'JSONPatch', patch: b64(JSON.stringify(patch)) } } };
}

/** The JSON Patch op that sets one annotation (`hasMap`: the annotations map exists by then). */
function annotationOp(obj: { metadata?: Meta }, hasMap: boolean, key: string, value: string): object {
  return hasMap || isRecord(obj.metadata?.annotations)
    ? { op: 'add', path: `/metadata/annotations/${pointerEscape(key)}`, value }
    : { op: 'add', path: '/metadata/annotations', value: { [key]: value } };
}

interface StampRequest {
  operation: string; kind: string; namespace: string; obj: { metadata?: Meta }; old: { metadata?: Meta } | undefined;
  user: Requester; mayImpersonate: MayImpersonate; sealer: Sealer;
}

/** The requester stamp: added and sealed on create, never changed after (see the file header). */
async function decideStamp(
  q: StampRequest, respond: (allowed: boolean, extra?: Partial<AdmissionResponse>) => AdmissionOutcome['review'], deny: (reason: string) => AdmissionOutcome,
): Promise<AdmissionOutcome> {
  const { operation, kind, obj, old, user, mayImpersonate } = q;
  const before = `the ${REQUESTER_ANNOTATION} annotation records who created this ${kind}`;
  const newStamp = rawStamp(obj);
  const patched = (ops: object[]): AdmissionOutcome['review'] => respond(true, { patchType: 'JSONPatch', patch: b64(JSON.stringify(ops)) });
  // Sealed now on create; on update (a stamp set on an object that had none) for the creation time the object has.
  const sealedAt = operation === 'UPDATE' && typeof old?.metadata?.creationTimestamp === 'string' ? new Date(old.metadata.creationTimestamp) : q.sealer.now();

  if (operation === 'UPDATE') {
    if (old === undefined) return deny(`the admission request for this UPDATE of a ${kind} carries no old object`);
    const oldStamp = rawStamp(old);
    const newSeal = rawAnnotation(obj, SEAL_ANNOTATION);
    const oldSeal = rawAnnotation(old, SEAL_ANNOTATION);
    if (oldStamp !== undefined) {
      if (newStamp === oldStamp && newSeal === oldSeal) return { review: respond(true) };
      if (newStamp === oldStamp) return deny(`the ${SEAL_ANNOTATION} annotation proves who created this ${kind} and is set only by the Stowage admission webhook: user "${user.username}" tried to ${newSeal === undefined ? 'remove' : 'change'} it`);
      return deny(`${before} and cannot be changed or removed: user "${user.username}" tried to ${newStamp === undefined ? 'remove' : 'change'} it`);
    }
    // The object predates the webhook: nobody is recorded, and an update does not make its
    // author the requester. Setting a stamp now is judged like setting one on create.
    if (newStamp === undefined) {
      if (newSeal === oldSeal) return { review: respond(true) };
      return deny(`the ${SEAL_ANNOTATION} annotation is set only by the Stowage admission webhook, with the ${REQUESTER_ANNOTATION} annotation: user "${user.username}" tried to set it alone`);
    }
  } else if (newStamp === undefined) {
    const stamp = formatRequester(user);
    return { review: patched(sealOps(kind, q.namespace, obj, stamp, true, sealedAt, q.sealer)), stamped: user };
  }
  const sealIt = (): AdmissionOutcome => (operation === 'UPDATE' && typeof old?.metadata?.creationTimestamp !== 'string'
    ? deny(`the admission request for this UPDATE of a ${kind} carries an old object without a creationTimestamp to seal the stamp for`)
    : { review: patched(sealOps(kind, q.namespace, obj, newStamp ?? '', false, sealedAt, q.sealer)) });

  // The request sets a stamp itself.
  const stamped = parseRequester(newStamp ?? '');
  if ('error' in stamped) return deny(`${before} and is set only by the Stowage admission webhook: ${stamped.error}`);
  // Several webhook configurations (or a reinvocation) may see one object: our own stamp again is fine.
  if (sameRequester(stamped, user)) return sealIt();
  let allowed: boolean;
  try {
    const answers = await Promise.all(impersonationNeeded(stamped).map((a) => mayImpersonate(user, a)));
    allowed = answers.every((a) => a);
  } catch (err) {
    return deny(`${before}, and whether user "${user.username}" may set it to "${stamped.username}" could not be checked: ${errorMessage(err)}`);
  }
  if (allowed) return sealIt();
  return deny(`${before} and is set only by the Stowage admission webhook: user "${user.username}" may not set it (it names "${stamped.username}")`);
}
