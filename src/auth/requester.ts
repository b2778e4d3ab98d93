// Who asked for a run. The admission webhook (webhook/admission.ts) stamps every Backup, Restore,
// DownloadRequest, DeleteBackupRequest and Schedule on create with the user the API server
// authenticated; nobody else may set or change the stamp. Runs act with that user's rights
// (auth/authorizer.ts) unless the server runs with --trust-mode cluster-admin.
import type { KubeObject } from '../kube/index.js';

export const REQUESTER_ANNOTATION = 'stowage.dev/requester';

/** An authenticated user as the API server's admission request names it. */
export interface Requester {
  username: string;
  /** Empty when the authenticator gives none (static tokens). */
  uid: string;
  groups: string[];
}

/** The annotation value: one JSON object, so the three parts are set and checked together. */
export function formatRequester(r: Requester): string {
  return JSON.stringify({ username: r.username, uid: r.uid, groups: [...r.groups] });
}

/** The stamp on `obj`: absent (undefined), or a parsed Requester, or an error saying why it is unreadable. */
export function requesterOf(obj: Pick<KubeObject, 'metadata'>): Requester | { error: string } | undefined {
  const raw = obj.metadata?.annotations?.[REQUESTER_ANNOTATION];
  if (raw === undefined) return undefined;
  return parseRequester(raw);
}

export function parseRequester(raw: string): Requester | { error: string } {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { error: `the ${REQUESTER_ANNOTATION} annotation is not JSON` };
  }
  if (typeof v !== 'object' || v === null) return { error: `the ${REQUESTER_ANNOTATION} annotation is not an object` };
  const o = v as Record<string, unknown>;
  if (typeof o.username !== 'string' || o.username === '') return { error: `the ${REQUESTER_ANNOTATION} annotation has no username` };
  const uid = o.uid ?? '';
  if (typeof uid !== 'string') return { error: `the ${REQUESTER_ANNOTATION} annotation's uid is not a string` };
  const groups = o.groups ?? [];
  if (!Array.isArray(groups) || !groups.every((g): g is string => typeof g === 'string')) {
    return { error: `the ${REQUESTER_ANNOTATION} annotation's groups are not a list of strings` };
  }
  return { username: o.username, uid, groups };
}

export const isRequester = (r: Requester | { error: string } | undefined): r is Requester => r !== undefined && !('error' in r);

/** For describe output and logs: `alice (groups: team-a, system:authenticated)`. */
export function describeRequester(r: Requester): string {
  const groups = r.groups.filter((g) => g !== 'system:authenticated');
  return groups.length === 0 ? r.username : `${r.username} (groups: ${groups.join(', ')})`;
}

export function sameRequester(a: Requester, b: Requester): boolean {
  return a.username === b.username && a.uid === b.uid && a.groups.length === b.groups.length && a.groups.every((g, i) => g === b.groups[i]);
}
