// Service-account tokens are the target cluster's to issue. A token secret the token controller
// generated (`<serviceaccount>-token-xxxxx`) is signed for the old service account's uid, so the
// controller would delete the restored copy; it is skipped, and the ServiceAccount no longer lists
// it, so the controller issues a fresh one. A token secret a user created by hand is restored
// without its old uid and token, and the controller fills in a new token.
import type { KubeObject, RestoreItemAction } from '../../plugin/api/index.js';
import { arrayAt, isRecord, recordAt } from '../objects.js';
import { selectorFor } from './selector.js';

export const SA_TOKEN_TYPE = 'kubernetes.io/service-account-token';
export const SA_NAME_ANNOTATION = 'kubernetes.io/service-account.name';
export const SA_UID_ANNOTATION = 'kubernetes.io/service-account.uid';

/** `<sa>-token-` plus the 5-character suffix the token controller generates. */
export function isGeneratedTokenName(secretName: string, serviceAccount: string): boolean {
  const prefix = `${serviceAccount}-token-`;
  return secretName.startsWith(prefix) && /^[a-z0-9]{5}$/.test(secretName.slice(prefix.length));
}

export function restoreServiceAccount(item: KubeObject): KubeObject {
  const secrets = arrayAt(item, 'secrets');
  if (secrets === undefined) return item;
  const kept = secrets.filter((s) => !(isRecord(s) && typeof s.name === 'string' && isGeneratedTokenName(s.name, item.metadata.name)));
  if (kept.length > 0) item.secrets = kept;
  else delete item.secrets;
  return item;
}

/** 'skip' for a controller-generated token secret; otherwise the secret to restore. */
export function restoreTokenSecret(item: KubeObject): KubeObject | 'skip' {
  if (item.type !== SA_TOKEN_TYPE) return item;
  const sa = item.metadata.annotations?.[SA_NAME_ANNOTATION];
  if (sa !== undefined && isGeneratedTokenName(item.metadata.name, sa)) return 'skip';
  if (item.metadata.annotations !== undefined) delete item.metadata.annotations[SA_UID_ANNOTATION];
  const data = recordAt(item, 'data');
  if (data !== undefined) delete data.token;
  return item;
}

export const serviceAccountAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['serviceaccounts'])),
  execute: ({ item }) => Promise.resolve({ item: restoreServiceAccount(item), additionalItems: [], skipRestore: false }),
};

export const tokenSecretAction: RestoreItemAction = {
  appliesTo: () => Promise.resolve(selectorFor(['secrets'])),
  execute: ({ item }) => {
    const out = restoreTokenSecret(item);
    return Promise.resolve(out === 'skip' ? { item, additionalItems: [], skipRestore: true } : { item: out, additionalItems: [], skipRestore: false });
  },
};
