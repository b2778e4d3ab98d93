// The server's own RBAC, rule by rule, per trust mode: the one source that scripts/gen-rbac.ts
// renders into deploy/20-rbac.yaml, deploy/cluster-admin/20-rbac.yaml and the chart's role
// templates, and that tests install for a test server's ServiceAccount.
import type { TrustMode } from '../config/index.js';

/**
 * A name the rule is restricted to, resolved per install: the MutatingWebhookConfiguration the
 * server publishes its CA bundle into, and the Secret holding the webhook's TLS key pair.
 */
export type RuleNameRef = 'webhookConfiguration' | 'webhookTlsSecret';

export interface ServerRule {
  /** Stable id, written as `# rule: <id>` above the rule (tests drop rules by it). */
  id: string;
  /** Why the server needs it, in one line. */
  reason: string;
  /** `cluster`: in the ClusterRole; `namespace`: in the Role of the server's own namespace. */
  scope: 'cluster' | 'namespace';
  /** The trust modes that need the rule. */
  modes: readonly TrustMode[];
  apiGroups: readonly string[];
  resources: readonly string[];
  verbs: readonly string[];
  resourceNames?: readonly RuleNameRef[];
}

const BOTH: readonly TrustMode[] = ['requester', 'cluster-admin'];
const CLUSTER_ADMIN: readonly TrustMode[] = ['cluster-admin'];
const REQUESTER: readonly TrustMode[] = ['requester'];

/** Stowage's own kinds and their status subresources. */
const STOWAGE_RESOURCES = [
  'backups',
  'backupstoragelocations',
  'deletebackuprequests',
  'downloadrequests',
  'restores',
  'schedules',
  'serverstatusrequests',
  'volumesnapshotlocations',
].flatMap((r) => [r, `${r}/status`]);

/** Every rule, in the order they are rendered. */
export const SERVER_RULES: readonly ServerRule[] = [
  {
    id: 'backup-list',
    reason: 'Requester mode: runs read as their requester; the server itself only lists (namespace names for a requester who may not, its own kinds). LIST only: GET on "*" would also match the exec, attach, port-forward and proxy subresources.',
    scope: 'cluster',
    modes: REQUESTER,
    apiGroups: ['*'],
    resources: ['*'],
    verbs: ['list'],
  },
  {
    id: 'crd-read',
    reason: 'At start-up the server checks that each of its CustomResourceDefinitions is installed (and restores wait for restored CRDs to be established).',
    scope: 'cluster',
    modes: REQUESTER,
    apiGroups: ['apiextensions.k8s.io'],
    resources: ['customresourcedefinitions'],
    verbs: ['get'],
  },
  {
    id: 'backup-read',
    reason: 'Cluster-admin mode: backups and restores read (LIST in pages, GET) every selected item with the server\'s own rights, credential Secrets of locations included; never watch.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: ['*'],
    resources: ['*'],
    verbs: ['get', 'list'],
  },
  {
    id: 'restore-write',
    reason: 'Cluster-admin mode only: restores create any kind found in a backup and patch existing objects and their status with the server\'s own rights; no update, no delete.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: ['*'],
    resources: ['*'],
    verbs: ['create', 'patch'],
  },
  {
    id: 'restore-rbac',
    reason: 'Cluster-admin mode only: restoring Roles and bindings that grant more than this role holds needs escalate and bind.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: ['rbac.authorization.k8s.io'],
    resources: ['roles', 'clusterroles'],
    verbs: ['escalate', 'bind'],
  },
  {
    id: 'hook-exec',
    reason: 'Cluster-admin mode only: backup and restore hooks run commands in pods through pods/exec with the server\'s own rights (create; and get, which authorises the WebSocket exec\'s GET on API servers that check only that). Within backup-read and restore-write already, named so that it stays if they narrow. Requester mode has none: hooks exec as the requester.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: [''],
    resources: ['pods/exec'],
    verbs: ['create', 'get'],
  },
  {
    id: 'restore-hooks-watch',
    reason: 'Cluster-admin mode only: a restore with hooks waits on a watch of each pod it created for its init containers to finish and its containers to run.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: [''],
    resources: ['pods'],
    verbs: ['watch'],
  },
  {
    id: 'stowage-resources',
    reason: 'Stowage\'s own kinds: watched, status written, Backups created (schedules, sync) and deleted with finished requests; the only delete granted.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: ['stowage.dev'],
    resources: STOWAGE_RESOURCES,
    verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'],
  },
  {
    id: 'csi-snapshot-contents',
    reason: 'CSI snapshots: a backup keeps (patch to Retain, label) only the VolumeSnapshotContent bound to the uid of a VolumeSnapshot its run created, and its deletion deletes only contents labelled with its uid; it watches them to know when a snapshot is ready or gone.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshotcontents'],
    verbs: ['get', 'list', 'watch', 'patch', 'delete'],
  },
  {
    id: 'csi-snapshot-volumes',
    reason: 'Requester mode: to choose a claim\'s VolumeSnapshotClass the server reads the CSI driver of the claim\'s PersistentVolume (the VolumeSnapshots themselves are made as the requester).',
    scope: 'cluster',
    modes: REQUESTER,
    apiGroups: [''],
    resources: ['persistentvolumes'],
    verbs: ['get'],
  },
  {
    id: 'csi-snapshots',
    reason: 'Cluster-admin mode: a backup waits on its VolumeSnapshots (watch) and deletes each once its content is kept; creating them is restore-write\'s.',
    scope: 'cluster',
    modes: CLUSTER_ADMIN,
    apiGroups: ['snapshot.storage.k8s.io'],
    resources: ['volumesnapshots'],
    verbs: ['watch', 'delete'],
  },
  {
    id: 'impersonate',
    reason: 'Runs act as their requester: restores write with Impersonate-User and Impersonate-Group, and a requester may be a ServiceAccount.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: [''],
    resources: ['users', 'groups', 'serviceaccounts'],
    verbs: ['impersonate'],
  },
  {
    id: 'impersonate-uid',
    reason: 'Impersonate-Uid, sent where the API server supports it (1.22+); matches nothing on older servers.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: ['authentication.k8s.io'],
    resources: ['uids'],
    verbs: ['impersonate'],
  },
  {
    id: 'access-review',
    reason: 'Before listing, a SubjectAccessReview asks whether the requester may list each resource in each namespace in scope.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: ['authorization.k8s.io'],
    resources: ['subjectaccessreviews'],
    verbs: ['create'],
  },
  {
    id: 'webhook-configuration',
    reason: 'The server publishes its webhook CA bundle into its own MutatingWebhookConfiguration; it never creates one or touches another.',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: ['admissionregistration.k8s.io'],
    resources: ['mutatingwebhookconfigurations'],
    verbs: ['get', 'patch'],
    resourceNames: ['webhookConfiguration'],
  },
  {
    id: 'events',
    reason: 'Events on Backups and Restores; a repeated event is patched (count, lastTimestamp).',
    scope: 'cluster',
    modes: BOTH,
    apiGroups: [''],
    resources: ['events'],
    verbs: ['create', 'patch'],
  },
  {
    id: 'leader-election',
    reason: 'Every replica tries to create or take over the Lease in its own namespace; only the holder reconciles.',
    scope: 'namespace',
    modes: BOTH,
    apiGroups: ['coordination.k8s.io'],
    resources: ['leases'],
    verbs: ['get', 'create', 'update'],
  },
  {
    id: 'webhook-tls-secret',
    reason: 'The webhook\'s TLS key pair is kept in one Secret of the server\'s namespace, which the install creates; the server reads and renews it by name and creates no Secret (a service-account token Secret would be a token that never expires).',
    scope: 'namespace',
    modes: BOTH,
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get', 'update'],
    resourceNames: ['webhookTlsSecret'],
  },
  {
    id: 'credential-secrets',
    reason: 'Requester mode: locations read their credential Secrets, which live in the server\'s namespace.',
    scope: 'namespace',
    modes: REQUESTER,
    apiGroups: [''],
    resources: ['secrets'],
    verbs: ['get'],
  },
];

/** The rules a server in `mode` needs, in render order. */
export function rulesFor(mode: TrustMode): ServerRule[] {
  return SERVER_RULES.filter((r) => r.modes.includes(mode));
}

/** The Secret holding the webhook's TLS key pair, named after the webhook configuration. */
export function webhookTlsSecretName(webhookConfigurationName: string): string {
  return `${webhookConfigurationName}-webhook-tls`;
}

/** Concrete names for the rules' resourceNames. */
export type RuleNames = Record<RuleNameRef, string>;

export function ruleNames(webhookConfigurationName: string): RuleNames {
  return { webhookConfiguration: webhookConfigurationName, webhookTlsSecret: webhookTlsSecretName(webhookConfigurationName) };
}

/** An RBAC PolicyRule as the API takes it. */
export interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

export function policyRule(rule: ServerRule, names: RuleNames): PolicyRule {
  const out: PolicyRule = { apiGroups: [...rule.apiGroups], resources: [...rule.resources], verbs: [...rule.verbs] };
  if (rule.resourceNames !== undefined) out.resourceNames = rule.resourceNames.map((n) => names[n]);
  return out;
}

/** Size of a rule set: rule entries, and (group, resource, verb) triples granted. */
export function ruleCount(rules: readonly Pick<ServerRule, 'apiGroups' | 'resources' | 'verbs'>[]): { rules: number; verbResourcePairs: number } {
  return { rules: rules.length, verbResourcePairs: rules.reduce((n, r) => n + r.apiGroups.length * r.resources.length * r.verbs.length, 0) };
}
