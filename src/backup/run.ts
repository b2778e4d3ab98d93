// runBackup: one backup run, from discovery to the uploaded tarball. The controller passes every
// dependency in, then writes the other artifacts (BackupStore.completeBackup) and the log, and logs
// the run's end line (controller/run/lifecycle.ts): the engine does not, as the run can still fail after it.
import type winston from 'winston';
import type { Backup } from '../apis/v1/index.js';
import { createTarballWriter, FORMAT_VERSION, manifestFromDigest, type ArchiveDigest, type WrittenManifest } from '../archive/index.js';
import { isApiUnreachable, isNotFound, type ApiResource, type DynamicClient, type KubeObject as ListedObject } from '../kube/index.js';
import type { BackupStore } from '../persistence/backupStore.js';
import { countResults, type ResourceList, type RunResults } from '../persistence/results.js';
import { connectionOf } from '../hooks/index.js';
import { compileBackupHooks } from '../selection/hooks.js';
import { mapLimit } from '../util/concurrency.js';
import { errorMessage } from '../util/errors.js';
import {
  builtinActions, clusterRoleBindingIndex, CRD_GROUP_RESOURCE, crdTable, GR, resolveActions,
  type ClusterRoleBindingIndex, type NamedBackupItemAction, type ResolvedBackupItemAction,
} from './actions/index.js';
import { backupItem, collectUnit, dependencyRights, FatalBackupError, MAX_PER_NAMESPACE_LISTS, stoppedMessage, wantNamespace, type CollectContext, type ListUnit } from './collect.js';
import { listsInFull, newBackupRequest, recordOf, recordProblem, recordResourceError, type BackupProgress, type BackupRequest } from './request.js';
import type { Access } from './rights.js';
import { discoverResources, type BackupScope } from './scope.js';
import type { Selection } from '../selection/compile.js';
import { selectionLogFields } from '../selection/validate.js';
import { mayIncludeGroup, selectResources, unservedIncludes, type ResourceSelection } from './resources.js';
import { collectOtherVersions } from './versions.js';
import type { SnapshotTaker } from '../volumes/index.js';

export interface BackupDeps {
  client: DynamicClient;
  store: BackupStore;
  /** The run's logger (its lines go to the backup's own log). */
  log: winston.Logger;
  /** Plugin item actions, run after the built-in ones. */
  actions?: readonly NamedBackupItemAction[];
  /**
   * Run the built-in actions (pod -> PVCs; pod templates -> service account, PriorityClass,
   * RuntimeClass; PVC -> PV -> StorageClass; ServiceAccount -> ClusterRoleBindings -> ClusterRoles;
   * RoleBinding -> ClusterRole; custom resource -> CRD). Default true.
   */
  builtinActions?: boolean;
  /** LIST page size (`--client-page-size`). Default 500. */
  pageSize?: number;
  /** LISTs in flight at once, across resources and namespaces. Default 4. The client's QPS/burst still apply. */
  concurrency?: number;
  /** Called after every item written; the caller throttles status patches. */
  onProgress?: (p: BackupProgress) => void;
  /** Aborting it stops the run: it ends Failed. */
  signal?: AbortSignal;
  /** Start time; stamps the tarball entries. Default now. */
  startTime?: Date;
  /** zlib level for the tarball. Default 6. */
  gzipLevel?: number;
  /**
   * Trust mode requester: the scope as the requester may read it (scope.ts), with `client` theirs
   * (impersonating). Absent: everything in scope is read with `client`'s rights, unchecked.
   */
  scope?: BackupScope;
  /** Why the scope could not be settled (scope.ts): the run ends Failed with it, having read nothing. */
  scopeFailure?: string;
  /** The run log's line saying whose rights the run uses (`running with the rights of alice ...`). */
  rights?: string;
  /** Takes each bound claim's CSI snapshot as the claim is backed up (volumes/); absent: none is taken (snapshotVolumes: false). */
  volumes?: SnapshotTaker;
}

export interface BackupResult {
  phase: 'Completed' | 'PartiallyFailed' | 'Failed';
  /** Why the run failed (phase Failed), one sentence. */
  failureReason?: string;
  formatVersion: string;
  /** SHA-256 of every tarball entry and of the tarball; absent when the tarball was not written whole. */
  manifest?: WrittenManifest;
  resourceList: ResourceList;
  results: RunResults;
  progress: BackupProgress;
  warnings: number;
  errors: number;
  /** Hooks attempted and failed; absent when the run ran none. */
  hookStatus?: { hooksAttempted: number; hooksFailed: number };
  /** CSI snapshots asked for, and those kept ready (Velero's csiVolumeSnapshotsAttempted/Completed). */
  volumeSnapshots: { attempted: number; completed: number };
}

const DEFAULT_PAGE_SIZE = 500;
const DEFAULT_CONCURRENCY = 4;

/** `selection`: the backup's, when the caller compiled it already (to check the requester's scope). */
export async function runBackup(deps: BackupDeps, backup: Backup, selection?: Selection): Promise<BackupResult> {
  const req = newBackupRequest(backup, selection);
  const { log } = deps;
  const name = backup.metadata.name;
  const abort = new AbortController();
  const onOuterAbort = (): void => abort.abort(deps.signal?.reason);
  deps.signal?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    log.info(`starting backup ${backup.metadata.namespace ?? ''}/${name}`, {
      includedNamespaces: req.namespaces.includes, excludedNamespaces: req.namespaces.excludes,
      includedResources: req.resources.includes, excludedResources: req.resources.excludes,
      includeClusterResources: req.includeClusterResources ?? 'auto', labelSelectors: req.selectors.filter((s) => s !== ''),
      ...selectionLogFields(backup.spec),
    });
    if (deps.rights !== undefined) log.info(deps.rights);
    if (deps.scope !== undefined) log.info(deps.scope.summary);
    if (deps.scopeFailure !== undefined) return finish(req, undefined, deps.scopeFailure, deps.volumes);
    const prepared = await prepare(deps, req).catch((err: unknown) => new FatalBackupError(errorMessage(err), { cause: err }));
    if (prepared instanceof FatalBackupError) return finish(req, undefined, prepared.message, deps.volumes);
    return await collectAndUpload(deps, req, prepared, abort.signal);
  } finally {
    deps.signal?.removeEventListener('abort', onOuterAbort);
  }
}

interface Prepared {
  selection: ResourceSelection;
  byGroupResource: Map<string, ApiResource>;
  actions: ResolvedBackupItemAction[];
  namespaceObjects: ListedObject[];
}

async function prepare(deps: BackupDeps, req: BackupRequest): Promise<Prepared> {
  const { client, log } = deps;
  const { resources: discovered, groupErrors } = deps.scope?.discovery ?? await discoverResources(client);
  for (const { groupVersion: gv, err } of groupErrors) {
    // Whatever that group version serves is left out: an error, unless the filter cannot include any of it.
    const group = gv.includes('/') ? gv.slice(0, gv.indexOf('/')) : '';
    if (!mayIncludeGroup(req, group)) {
      log.warn(recordProblem(req, 'warnings', '', `API group version ${gv} could not be discovered; this backup would take none of its resources: ${err.message}`));
      continue;
    }
    log.error(recordProblem(req, 'errors', '', `API group version ${gv} could not be discovered, so its resources are not backed up: ${err.message}`));
  }
  const byGroupResource = new Map(discovered.map((r) => [r.groupResource, r]));
  const selection = allowedSelection(selectResources(discovered, req.resources, req.listClusterScoped), deps.scope);
  for (const s of selection.skipped) log.debug(`not backing up ${s.groupResource}: ${s.reason}`);
  for (const entry of unservedIncludes(req, discovered)) {
    const field = req.resources.style === 'scoped' ? 'the scope-specific resource filters name' : 'includedResources names';
    log.warn(recordProblem(req, 'warnings', '', `${field} "${entry}", which this cluster does not serve; nothing is backed up for it`));
  }
  // Every resource in scope gets a record, so one with no items still shows it was listed.
  for (const r of [...selection.namespaced, ...selection.cluster, ...(selection.namespaces === undefined ? [] : [selection.namespaces])]) recordOf(req, r);
  if (deps.scope !== undefined) recordScopeProblems(req, log, deps.scope, byGroupResource);
  log.info(`backing up ${selection.namespaced.length} namespaced and ${selection.cluster.length} cluster-scoped resource types` +
    (req.listClusterScoped ? '' : ' (cluster-scoped items only where related to backed-up items)'));

  const useBuiltins = deps.builtinActions ?? true;
  const crds = useBuiltins ? await listCrds(deps, req, byGroupResource, selection) : new Map<string, string>();
  const clusterRoleBindings = useBuiltins ? await listClusterRoleBindings(deps, req, byGroupResource, selection) : undefined;
  const actions = await resolveActions([
    ...(useBuiltins ? builtinActions({ crdByGroupKind: crds, ...(clusterRoleBindings !== undefined ? { clusterRoleBindings } : {}) }) : []),
    ...(deps.actions ?? []),
  ]);

  const namespaceObjects = await listNamespaceObjects(deps, req, byGroupResource);
  return { selection, byGroupResource, actions, namespaceObjects };
}

/** CRDs by the group and kind they serve, for the built-in action that takes a custom resource's CRD along. */
async function listCrds(
  deps: BackupDeps, req: BackupRequest, byGroupResource: ReadonlyMap<string, ApiResource>, selection: ResourceSelection,
): Promise<Map<string, string>> {
  const { client, log } = deps;
  const crdRes = byGroupResource.get(CRD_GROUP_RESOURCE);
  if (crdRes === undefined || !await mayListDependencies(deps, req, crdRes, customResourcesNote(selection))) return new Map<string, string>();
  try {
    return crdTable((await client.listAll(crdRes, { pageSize: deps.pageSize ?? DEFAULT_PAGE_SIZE })).items);
  } catch (err) {
    // The backup would leave out CRDs its custom resources need (not complete), unless it takes no cluster-scoped items at all.
    if (req.includeClusterResources === false) log.info(`listing CustomResourceDefinitions failed: ${errorMessage(err)}`);
    else log.error(recordProblem(req, 'errors', '', `listing CustomResourceDefinitions failed, so custom resources are backed up without their CRDs: ${errorMessage(err)}`));
    return new Map<string, string>();
  }
}

/** The Namespace objects of the backup: listed, got one by one when the requester may not list them, or the scope's. */
async function listNamespaceObjects(deps: BackupDeps, req: BackupRequest, byGroupResource: ReadonlyMap<string, ApiResource>): Promise<ListedObject[]> {
  const { client, log } = deps;
  let namespaceObjects: ListedObject[] = [];
  const nsRes = byGroupResource.get('namespaces');
  const nsAccess = nsRes === undefined ? undefined : deps.scope?.access.get(nsRes.groupResource);
  if (nsRes !== undefined && deps.scope !== undefined && (nsAccess === undefined ? !deps.scope.mayListNamespaces : !nsAccess.everywhere)) {
    // The requester may not list namespaces: the Namespace objects they may get, one by one.
    namespaceObjects = await getNamespaces(deps, req, nsRes, nsAccess === undefined || nsAccess.everywhere ? [] : nsAccess.namespaces);
  } else if (nsRes !== undefined && deps.scope?.namespaceObjects !== undefined) {
    namespaceObjects = deps.scope.namespaceObjects;
    warnMissingNamespaces(req, log, namespaceObjects);
  } else if (nsRes !== undefined) {
    try {
      namespaceObjects = (await client.listAll(nsRes, { pageSize: deps.pageSize ?? DEFAULT_PAGE_SIZE })).items;
    } catch (err) {
      const msg = recordProblem(req, 'errors', '', `listing namespaces failed: ${errorMessage(err)}`);
      log.error(msg);
    }
    warnMissingNamespaces(req, log, namespaceObjects);
  }
  return namespaceObjects;
}

/**
 * ClusterRoleBindings indexed by the service accounts they bind, for a backup that takes cluster
 * resources only as dependencies: one LIST per backup instead of one per ServiceAccount. Listed
 * too when includeClusterResources is false, so the log can name the bindings left out.
 */
async function listClusterRoleBindings(
  deps: BackupDeps, req: BackupRequest, byGroupResource: ReadonlyMap<string, ApiResource>, selection: ResourceSelection,
): Promise<ClusterRoleBindingIndex | undefined> {
  const res = byGroupResource.get(GR.clusterRoleBindings);
  const serviceAccounts = byGroupResource.get('serviceaccounts');
  // Needed only for ServiceAccounts in scope whose cluster-scoped dependencies are not listed anyway.
  if (res === undefined || (listsInFull(req, res) && req.names.isEmpty) || serviceAccounts === undefined || !req.resources.shouldInclude(serviceAccounts)) return undefined;
  const taken = selection.namespaced.some((r) => r.groupResource === serviceAccounts.groupResource);
  if (!await mayListDependencies(deps, req, res, taken ? 'no ClusterRoleBinding of a backed-up ServiceAccount is backed up' : undefined)) return undefined;
  try {
    return clusterRoleBindingIndex((await deps.client.listAll(res, { pageSize: deps.pageSize ?? DEFAULT_PAGE_SIZE })).items);
  } catch (err) {
    // With cluster resources off the bindings are only named in the log: not worth a warning.
    if (req.includeClusterResources === false) {
      deps.log.info(`listing ClusterRoleBindings failed, so the log cannot name those binding backed-up ServiceAccounts: ${errorMessage(err)}`);
      return undefined;
    }
    // The ServiceAccounts' bindings are part of what the backup promises to take: not complete.
    const msg = recordProblem(req, 'errors', '', `listing ClusterRoleBindings failed, so those binding backed-up ServiceAccounts are not backed up: ${errorMessage(err)}`);
    deps.log.error(msg);
    return undefined;
  }
}

/**
 * What the backup LISTs: each resource per listed namespace, or cluster-wide; once per label
 * selector. A resource the requester may list only in some namespaces (`access`) is listed in
 * each of those, however many: a cluster-wide LIST would be refused.
 */
/**
 * The LISTs in the order they run: every pods LIST first, then the rest. A pod's hooks bracket its
 * claims and their snapshots (collect.ts backupBracketed), but only claims not taken yet come into the
 * bracket: were the claims LISTed beside the pods, a claim could be snapshotted outside its pod's
 * freeze. Velero orders its core group the same way (pods, then claims, then volumes).
 */
export function listPhases(units: readonly ListUnit[]): ListUnit[][] {
  const pods = units.filter((u) => u.res.group === '' && u.res.resource === 'pods');
  const rest = units.filter((u) => !pods.includes(u));
  return [pods, rest].filter((phase) => phase.length > 0);
}

export function listUnits(req: BackupRequest, selection: ResourceSelection, access?: ReadonlyMap<string, Access>): ListUnit[] {
  const units: ListUnit[] = [];
  // A few literal namespace names: one LIST per namespace. Many, wildcards or "all": one
  // cluster-wide LIST, filtered by collect.ts against the namespace filter.
  const literal = req.namespaces.literalIncludes();
  const scopes: (string | undefined)[] = literal !== undefined && literal.length <= MAX_PER_NAMESPACE_LISTS ? literal : [undefined];
  for (const selector of req.selectors) {
    for (const res of selection.namespaced) {
      const a = access?.get(res.groupResource);
      for (const namespace of a === undefined || a.everywhere ? scopes : a.namespaces) units.push({ res, namespace, selector });
    }
    for (const res of selection.cluster) units.push({ res, namespace: undefined, selector });
  }
  return units;
}

/** The selection less what the requester may list nowhere in scope (their records and messages come from the scope). */
function allowedSelection(selection: ResourceSelection, scope: BackupScope | undefined): ResourceSelection {
  if (scope === undefined) return selection;
  const anywhere = (r: ApiResource): boolean => {
    const a = scope.access.get(r.groupResource);
    return a === undefined || a.everywhere || a.namespaces.length > 0;
  };
  return { ...selection, namespaced: selection.namespaced.filter(anywhere), cluster: selection.cluster.filter(anywhere) };
}

/** What the scope left out, in the log and the results; a resource the spec named gets it in its record too. */
function recordScopeProblems(req: BackupRequest, log: winston.Logger, scope: BackupScope, byGroupResource: ReadonlyMap<string, ApiResource>): void {
  for (const p of scope.problems) {
    const res = p.groupResource === undefined ? undefined : byGroupResource.get(p.groupResource);
    if (res !== undefined) recordResourceError(req, res, p.message);
    if (p.kind === 'errors') log.error(recordProblem(req, 'errors', p.namespace, p.message));
    else log.warn(recordProblem(req, 'warnings', p.namespace, p.message));
  }
}

/**
 * Whether the requester may list a cluster-scoped resource the built-in actions need a table of
 * (CRDs, ClusterRoleBindings). When not, `consequence` (what the backup lacks for it) is a warning,
 * or only a log line when nothing in scope is affected or cluster resources are off.
 */
async function mayListDependencies(deps: BackupDeps, req: BackupRequest, res: ApiResource, consequence: string | undefined): Promise<boolean> {
  const scope = deps.scope;
  if (scope === undefined) return true;
  if ((await scope.reviewer.review({ verb: 'list', group: res.group, resource: res.resource, namespace: '' })).allowed) return true;
  const msg = `${scope.who} may not list ${res.groupResource}, so ${consequence ?? 'it is not read'}`;
  if (consequence === undefined || req.includeClusterResources === false) deps.log.info(msg);
  else deps.log.warn(recordProblem(req, 'warnings', '', msg));
  return false;
}

/**
 * What a requester who may not list CRDs loses: the CRDs of the resources in scope that may be
 * custom. Kubernetes keeps the groups without a dot and *.k8s.io / *.kubernetes.io for its own
 * APIs (a CRD there needs an api-approved annotation), so those are not named.
 */
function customResourcesNote(selection: ResourceSelection): string | undefined {
  const custom = [...selection.namespaced, ...selection.cluster]
    .filter((r) => r.group.includes('.') && !r.group.endsWith('.k8s.io') && !r.group.endsWith('.kubernetes.io'))
    .map((r) => r.groupResource);
  if (custom.length === 0) return undefined;
  const shown = custom.slice(0, 5).join(', ');
  return `custom resources (${shown}${custom.length > 5 ? ` and ${custom.length - 5} more` : ''}) are backed up without their CustomResourceDefinitions`;
}

/** The Namespace objects of `names` (those the requester may get), one GET each; one that does not exist is a warning if the spec named it. */
async function getNamespaces(deps: BackupDeps, req: BackupRequest, nsRes: ApiResource, names: readonly string[]): Promise<ListedObject[]> {
  const got = await mapLimit(names, deps.concurrency ?? DEFAULT_CONCURRENCY, async (ns) => {
    try {
      return await deps.client.get(nsRes, undefined, ns, deps.signal !== undefined ? { signal: deps.signal } : {});
    } catch (err) {
      if (isApiUnreachable(err)) throw err;
      if (isNotFound(err)) deps.log.warn(recordProblem(req, 'warnings', ns, `namespace "${ns}" is included but does not exist`));
      else deps.log.error(recordProblem(req, 'errors', ns, `getting namespace "${ns}" failed: ${errorMessage(err)}`));
      return undefined;
    }
  });
  return got.filter((n): n is ListedObject => n !== undefined);
}

function warnMissingNamespaces(req: BackupRequest, log: winston.Logger, namespaceObjects: readonly ListedObject[]): void {
  const existing = new Set(namespaceObjects.map((n) => n.metadata?.name ?? ''));
  for (const ns of req.namespaces.literalIncludes() ?? []) {
    if (namespaceObjects.length > 0 && !existing.has(ns)) {
      log.warn(recordProblem(req, 'warnings', ns, `namespace "${ns}" is included but does not exist`));
    }
  }
}

async function collectAndUpload(deps: BackupDeps, req: BackupRequest, p: Prepared, signal: AbortSignal): Promise<BackupResult> {
  const { log } = deps;
  const name = req.backup.metadata.name;
  const writer = createTarballWriter({ mtime: deps.startTime ?? new Date(), gzipLevel: deps.gzipLevel });
  let uploadError: unknown;
  const upload = deps.store.putTarball(name, writer.body).catch((err: unknown) => {
    uploadError = err;
    writer.abort(new Error(`uploading the tarball failed: ${errorMessage(err)}`));
  });
  const ctx: CollectContext = {
    req, client: deps.client, writer, actions: p.actions, byGroupResource: p.byGroupResource, log,
    pageSize: deps.pageSize ?? DEFAULT_PAGE_SIZE, signal, onProgress: deps.onProgress,
    ...(deps.scope !== undefined ? { rights: dependencyRights(deps.scope) } : {}),
    // Every pod may carry hook annotations, so hooks are looked for even when the spec has none.
    hooks: { plan: compileBackupHooks(req.backup.spec.hooks), conn: connectionOf(deps.client) },
    ...(deps.volumes !== undefined ? { volumes: deps.volumes } : {}),
  };
  let digest: ArchiveDigest | undefined;
  let fatal: string | undefined;
  try {
    for (const phase of listPhases(listUnits(req, p.selection, deps.scope?.access))) {
      await mapLimit(phase, deps.concurrency ?? DEFAULT_CONCURRENCY, (u) => collectUnit(ctx, u), { signal });
    }
    if (p.selection.namespaces !== undefined) {
      const record = recordOf(req, p.selection.namespaces);
      for (const ns of p.namespaceObjects) {
        if (!wantNamespace(req, ns)) continue;
        record.listed++;
        // Counted before it is written, as listed items are, so the count never passes the total.
        req.progress.totalItems++;
        if (!(await backupItem(ctx, p.selection.namespaces, ns))) req.progress.totalItems--;
      }
    }
    await collectOtherVersions(ctx);
    digest = await writer.finish();
  } catch (err) {
    fatal = signal.aborted ? stoppedMessage(signal) : errorMessage(err);
    writer.abort(new Error(fatal));
  }
  await upload;
  // The root cause wins over its echoes ("writing the tarball failed: uploading ... failed").
  if (signal.aborted) fatal = stoppedMessage(signal);
  else if (uploadError !== undefined) fatal = `uploading the tarball failed: ${errorMessage(uploadError)}`;
  return finish(req, fatal === undefined ? digest : undefined, fatal, deps.volumes);
}

/** The result; its warnings and errors (counted from the results) are the run's counts everywhere. */
function finish(req: BackupRequest, digest: ArchiveDigest | undefined, fatal: string | undefined, volumes: SnapshotTaker | undefined): BackupResult {
  const snapshots = volumes?.records() ?? [];
  if (snapshots.length > 0) req.results.volumeSnapshots = snapshots;
  req.results.resources = [...req.records.values()].sort((a, b) => (a.groupResource < b.groupResource ? -1 : a.groupResource > b.groupResource ? 1 : 0));
  const { warnings, errors } = countResults(req.results);
  const phase = fatal !== undefined ? 'Failed' : errors > 0 ? 'PartiallyFailed' : 'Completed';
  const result: BackupResult = {
    phase,
    formatVersion: FORMAT_VERSION,
    resourceList: req.seen.resourceList(),
    results: req.results,
    // Like Velero: once done, the total is what was backed up (the running total counted skipped items too).
    progress: { totalItems: req.progress.itemsBackedUp, itemsBackedUp: req.progress.itemsBackedUp },
    warnings,
    errors,
    volumeSnapshots: volumes?.counts() ?? { attempted: 0, completed: 0 },
  };
  if (digest !== undefined) result.manifest = manifestFromDigest(digest);
  if (req.hookStatus.hooksAttempted > 0) result.hookStatus = { ...req.hookStatus };
  if (fatal !== undefined) result.failureReason = fatal;
  return result;
}
