// Planning: which archive items a restore creates, in which namespace, and in which order. Runs on
// the whole archive after it was read and checked, and before anything is created, so every reason
// to refuse the restore (an item whose scope contradicts the cluster's, two items mapped onto one
// target) is found first. It works on the archive's index (ArchivedItem): the objects stay in the
// spill file until each is restored.
import type { ArchiveObject, ItemIdentity, SpilledItem } from '../archive/index.js';
import { spilledPath, splitGroupResource, versionOfApiVersion } from '../archive/index.js';
import { servedVersions, type ApiResource, type ResourceRef } from '../kube/index.js';
import type { KubeObject } from '../plugin/api/index.js';
import type { ResourceLike } from '../selection/filters.js';
import { anyLabelSelectorMatches } from '../selection/labels.js';
import { boundServiceAccounts, clusterReferences, GR } from '../kube/references.js';
import { neverRestoredReason } from './kinds.js';
import { displayName, isRecord, recordAt } from './objects.js';
import { controllerRefs, ownerIndex, ownerKinds, restoredController, type ControllerRef, type OwnerCandidate, type RestoredOwner } from './ownership.js';
import { PlannedItems } from './plannedItems.js';
import { orderTiers, type RestoreTier } from './priorities.js';
import { outcomeSlot } from './outcomes.js';
import { targetNamespace, type ItemOutcome, type RestoreRequest } from './request.js';

export const CRD_GROUP_RESOURCE = 'customresourcedefinitions.apiextensions.k8s.io';

/** Why a restore was refused before anything was created (the archive or the spec cannot be restored as is). */
export class RestoreRefusedError extends Error {
  override readonly name = 'RestoreRefusedError';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

/** What planning needs of an object besides its identity, picked while the archive is read. All absent for most items. */
export interface ItemFacts {
  labels?: Record<string, string>;
  /** Its `controller: true` owner references. */
  controllers?: ControllerRef[];
  /** A PersistentVolume's claimRef, `namespace/name`. */
  claim?: string;
  /** What a CustomResourceDefinition serves. */
  serves?: CrdServes;
  /** Cluster-scoped objects it needs (kube/references clusterReferences), as item keys. */
  needs?: string[];
  /** A ClusterRoleBinding's service accounts, `ns/name`, or `ns/*` for every account of a namespace. */
  binds?: string[];
}

/** An archive item as the restore holds it while planning and running: its identity, facts, and where its bytes are. */
export type ArchivedItem = SpilledItem<ItemFacts | undefined>;

/**
 * The facts of an object (the `pick` of spillArchive); undefined when it has none, to keep the index
 * small. Labels are only kept when the restore has label selectors (`withLabels`): most objects have some.
 */
export function itemFacts(obj: ArchiveObject, id: Pick<ItemIdentity, 'groupResource'>, withLabels = true): ItemFacts | undefined {
  const facts: ItemFacts = {};
  const labels = obj.metadata.labels;
  if (withLabels && isRecord(labels) && Object.keys(labels).length > 0) facts.labels = labels;
  const controllers = controllerRefs(obj);
  if (controllers !== undefined) facts.controllers = controllers;
  if (id.groupResource === 'persistentvolumes') {
    const ref = recordAt(recordAt(obj, 'spec') ?? {}, 'claimRef');
    if (ref !== undefined) facts.claim = `${String(ref.namespace)}/${String(ref.name)}`;
  }
  if (id.groupResource === CRD_GROUP_RESOURCE) {
    const serves = crdServes(obj);
    if (serves !== undefined) facts.serves = serves;
  }
  const needs = clusterReferences(id.groupResource, obj);
  if (needs.length > 0) facts.needs = needs.map((n) => itemKey(n.groupResource, '', n.name));
  if (id.groupResource === GR.clusterRoleBindings) {
    const binds = boundServiceAccounts(obj).map((b) => `${b.namespace}/${b.name ?? '*'}`);
    if (binds.length > 0) facts.binds = binds;
  }
  return Object.keys(facts).length > 0 ? facts : undefined;
}

export interface PlannedItem {
  /** With sourceNamespace and sourceName, the item's identity in the archive (PlannedItems finds it by them). */
  groupResource: string;
  /** Namespace in the backup ('' for cluster-scoped items). */
  sourceNamespace: string;
  /** Name in the backup. */
  sourceName: string;
  /** Namespace restored into ('' for cluster-scoped items). */
  namespace: string;
  /** Name restored as (a mapped Namespace gets its new name). */
  name: string;
  ref: ResourceRef;
  resource: ResourceLike;
  /** The item in the archive; undefined for a synthesized Namespace. */
  archived: ArchivedItem | undefined;
  /** Set when the plan already decided to skip the item, with the reason. */
  skip?: string;
  /**
   * Its controller owner, when that is in the restore too: the executor restores the owner first and
   * leaves the item to the owner's controller when the owner is in the cluster (see ownership.ts).
   */
  owner?: RestoredOwner<PlannedItem>;
  /** A Namespace the backup does not hold, created bare because restored items live in it (see bareNamespace). */
  synthesized?: boolean;
  /**
   * Set when the item is restored at another version than its resource was backed up at: from the
   * backup's copy at that version (`copy`), or (no copy at a version the cluster serves) the stored
   * object sent with its apiVersion changed to `used`.
   */
  versionChange?: VersionChange;
  /** The executor's: the item's restore while it runs, then its outcome. */
  restored: Promise<ItemOutcome> | ItemOutcome | undefined;
  /**
   * The record its outcome is written into (outcomes.ts), made with the plan. Made one at a time as
   * items finished, 50,000 small records that live to the end were promoted among the run's garbage
   * and fragmented the old generation: the 50k restore's peak was 7 MiB higher (session 21).
   */
  slot?: ItemOutcome;
}

export interface VersionChange {
  /** The apiVersion the backup read the resource at. */
  stored: string;
  /** The apiVersion it is restored at. */
  used: string;
  /** Whether the backup holds the item at `used` (spec.includeAllGroupVersions); else its apiVersion is rewritten. */
  copy: boolean;
  /** Whether the cluster serves `stored` (then `used` is its preferred version, of which the backup holds a copy). */
  storedServed: boolean;
}

export interface RestorePlan {
  items: PlannedItems<PlannedItem>;
  tiers: { tier: RestoreTier; items: PlannedItem[] }[];
  /** Target namespace -> its Namespace item. */
  namespaces: Map<string, PlannedItem>;
  /** Custom resource group-resource -> its CRD's item, for CRDs in the plan. */
  crds: Map<string, PlannedItem>;
  /** Group-resources left out because they are never restored, with the reason and item count. */
  neverRestored: Map<string, { reason: string; count: number }>;
  /** Plans an archive item on demand (an action's additional item); undefined when it cannot be restored. */
  planAdditional(groupResource: string, namespace: string, name: string): PlannedItem | undefined;
}

export function itemKey(groupResource: string, namespace: string, name: string): string {
  // join() makes one flat string; a template literal makes a rope of small strings, ~3x the memory per item.
  return [groupResource, namespace, name].join('\u0000');
}

export interface CrdServes {
  groupResource: string;
  namespaced: boolean;
}

/** `widgets.example.com` for a CRD object (its spec.names.plural and spec.group). */
export function crdServes(crd: KubeObject): CrdServes | undefined {
  const spec = recordAt(crd, 'spec');
  const names = spec === undefined ? undefined : recordAt(spec, 'names');
  if (spec === undefined || names === undefined || typeof spec.group !== 'string' || typeof names.plural !== 'string') return undefined;
  return { groupResource: `${names.plural}.${spec.group}`, namespaced: spec.scope !== 'Cluster' };
}

/** The object a synthesized Namespace item is created from. */
export function bareNamespace(name: string): KubeObject {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name } };
}

/**
 * `alternates`: the archive's copies at other versions (a backup with includeAllGroupVersions). Each
 * item is restored at its stored version when the cluster serves it. With copies at other versions,
 * the copy at the cluster's preferred version wins (Velero's EnableAPIGroupVersions rule), then the
 * stored one, then a copy at another version the cluster serves; with none, the stored object goes
 * to the cluster's preferred version with its apiVersion changed (item.versionChange says so).
 */
export function buildPlan(
  items: readonly ArchivedItem[], req: RestoreRequest, discovered: readonly ApiResource[], alternates: readonly ArchivedItem[] = [],
): RestorePlan {
  const byGr = new Map<string, ApiResource>(discovered.map((r) => [r.groupResource, r]));
  const index = indexArchive(items, alternates);
  checkScopes(items, byGr, index.crdItems);
  const pl = newPlanner(req, byGr, index);
  const { neverRestored, namespaceItems } = selectItems(pl, items);
  const crds = addRelatedCrds(pl, index.crdItems);
  if (req.includeRelatedClusterScoped) addClaimedVolumes(pl, items);
  addReferenced(pl, items);
  const namespaces = planNamespaces(pl, namespaceItems);
  if (req.namespaceMapping.size > 0) checkTargetsUnique([...pl.selected.values()]);
  linkOwners(pl.selected);
  return { items: pl.selected, tiers: orderPlan(pl), namespaces, crds, neverRestored, planAdditional: additionalPlanner(pl, items) };
}

/** What the archive says about its resources, read once before planning. */
interface ArchiveIndex {
  /** Item key -> its copies at other versions. */
  copiesOf: Map<string, ArchivedItem[]>;
  kindOf: Map<string, string>;
  /** Whether each resource's items are namespaced, from the archive: the scope-specific filters need it for resources the cluster does not serve (yet). */
  namespacedOf: Map<string, boolean>;
  /** Custom resource group-resource -> the archive's CRD item that serves it. */
  crdItems: Map<string, ArchivedItem>;
}

function indexArchive(items: readonly ArchivedItem[], alternates: readonly ArchivedItem[]): ArchiveIndex {
  const copiesOf = new Map<string, ArchivedItem[]>();
  for (const a of alternates) {
    const k = itemKey(a.groupResource, a.namespace ?? '', a.name);
    const list = copiesOf.get(k);
    if (list === undefined) copiesOf.set(k, [a]);
    else list.push(a);
  }
  const kindOf = new Map<string, string>();
  const namespacedOf = new Map<string, boolean>();
  const crdItems = new Map<string, ArchivedItem>();
  for (const it of items) {
    if (!kindOf.has(it.groupResource)) {
      kindOf.set(it.groupResource, it.kind);
      namespacedOf.set(it.groupResource, it.namespace !== undefined);
    }
    const serves = it.groupResource === CRD_GROUP_RESOURCE ? it.picked?.serves : undefined;
    if (serves !== undefined) crdItems.set(serves.groupResource, it);
  }
  return { copiesOf, kindOf, namespacedOf, crdItems };
}

/**
 * What every planning phase shares. `selected` keeps the order items were planned in, which the
 * later phases (namespaces, owners) walk, so the phases run in a fixed order.
 */
interface Planner {
  req: RestoreRequest;
  describe(gr: string): ResourceLike;
  toPlanned(stored: ArchivedItem): PlannedItem;
  labelsMatch(it: ArchivedItem): boolean;
  /**
   * Whether a related cluster-scoped item comes along: unless includeClusterResources is false, its
   * resource is excluded explicitly or excludedNames names it. includedNames does not keep it out (as on backup).
   */
  related(gr: string, name: string): boolean;
  selected: PlannedItems<PlannedItem>;
}

function newPlanner(req: RestoreRequest, byGr: ReadonlyMap<string, ApiResource>, index: ArchiveIndex): Planner {
  const describe = describer(byGr, index);
  const refOf = refMaker();
  const mapNs = (ns: string): string => targetNamespace(req, ns);
  const toPlanned = (stored: ArchivedItem): PlannedItem => {
    const src = stored.namespace ?? '';
    const copies = index.copiesOf.size === 0 ? undefined : index.copiesOf.get(itemKey(stored.groupResource, src, stored.name));
    const { copy: it, version, change } = chooseCopy(stored, byGr.get(stored.groupResource), copies);
    const namespace = src === '' ? '' : mapNs(src);
    const name = it.groupResource === 'namespaces' ? mapNs(it.name) : it.name;
    // The slot in the literal: a property added afterwards would give every item a properties array.
    const p: PlannedItem = {
      groupResource: it.groupResource,
      sourceNamespace: src,
      sourceName: it.name,
      namespace,
      name,
      ref: refOf(it, version),
      resource: describe(it.groupResource),
      archived: it,
      restored: undefined,
      slot: outcomeSlot({ groupResource: it.groupResource, namespace, name }),
    };
    if (change !== undefined) p.versionChange = change;
    return p;
  };
  return {
    req,
    describe,
    toPlanned,
    labelsMatch: (it) => anyLabelSelectorMatches(req.selectors, it.picked?.labels),
    related: (gr, name) =>
      req.includeRelatedClusterScoped && !req.resources.excludesExplicitly(describe(gr)) && !req.names.excludes(describe(gr), name),
    selected: new PlannedItems(),
  };
}

/** A resource as the filters see it: from discovery, else from the archive (a resource the cluster does not serve yet). */
function describer(byGr: ReadonlyMap<string, ApiResource>, index: ArchiveIndex): (gr: string) => ResourceLike {
  const described = new Map<string, ResourceLike>();
  return (gr) => {
    const have = byGr.get(gr) ?? described.get(gr);
    if (have !== undefined) return have;
    const { group, resource } = splitGroupResource(gr);
    const kind = index.kindOf.get(gr);
    const namespaced = index.namespacedOf.get(gr);
    const d: ResourceLike = kind === undefined ? { group, resource } : { group, resource, kind };
    if (namespaced !== undefined) d.namespaced = namespaced;
    described.set(gr, d);
    return d;
  };
}

/** One ResourceRef per resource, version and scope, shared by its items (nobody changes a ref). */
function refMaker(): (it: ArchivedItem, version: string) => ResourceRef {
  const refs = new Map<string, ResourceRef>();
  return (it, version) => {
    const namespaced = it.namespace !== undefined;
    const k = itemKey(it.groupResource, version, String(namespaced));
    let ref = refs.get(k);
    if (ref === undefined) {
      const { group, resource } = splitGroupResource(it.groupResource);
      ref = { group, version, resource, namespaced };
      refs.set(k, ref);
    }
    return ref;
  };
}

/** The items the filters select, less those never restored (counted) and Namespace items (planned last). */
function selectItems(pl: Planner, items: readonly ArchivedItem[]): { neverRestored: RestorePlan['neverRestored']; namespaceItems: ArchivedItem[] } {
  const { req } = pl;
  const neverRestored = new Map<string, { reason: string; count: number }>();
  const namespaceItems: ArchivedItem[] = [];
  for (const it of items) {
    const never = neverRestoredReason(it.groupResource);
    if (never !== undefined) {
      const n = neverRestored.get(it.groupResource) ?? { reason: never, count: 0 };
      n.count++;
      neverRestored.set(it.groupResource, n);
      continue;
    }
    if (it.groupResource === 'namespaces') {
      namespaceItems.push(it);
      continue;
    }
    const res = pl.describe(it.groupResource);
    if (!req.resources.shouldInclude(res)) continue;
    if (it.namespace !== undefined ? !req.namespaces.shouldInclude(it.namespace) : !req.includeClusterScoped) continue;
    if (!req.names.shouldInclude(res, it.name)) continue;
    if (!pl.labelsMatch(it)) continue;
    pl.selected.add(pl.toPlanned(it));
  }
  return { neverRestored, namespaceItems };
}

/** The CRDs of restored custom resources come along (Planner.related); returns custom resource -> its planned CRD. */
function addRelatedCrds(pl: Planner, crdItems: ReadonlyMap<string, ArchivedItem>): Map<string, PlannedItem> {
  const { selected } = pl;
  const selectedGrs = new Set([...selected.values()].map((p) => p.groupResource));
  const crds = new Map<string, PlannedItem>();
  for (const [gr, crd] of crdItems) {
    let planned = selected.get(CRD_GROUP_RESOURCE, '', crd.name);
    if (planned === undefined && selectedGrs.has(gr) && pl.related(CRD_GROUP_RESOURCE, crd.name)) selected.add((planned = pl.toPlanned(crd)));
    if (planned !== undefined) crds.set(gr, planned);
  }
  return crds;
}

/** The PVs of restored claims come along (Planner.related). */
function addClaimedVolumes(pl: Planner, items: readonly ArchivedItem[]): void {
  const { selected } = pl;
  const claims = new Set([...selected.values()].filter((p) => p.groupResource === 'persistentvolumeclaims').map((p) => `${p.sourceNamespace}/${p.name}`));
  for (const it of items) {
    if (it.groupResource !== 'persistentvolumes') continue;
    const claim = it.picked?.claim;
    if (claim !== undefined && claims.has(claim) && pl.related(it.groupResource, it.name)) {
      selected.add(pl.toPlanned(it));
    }
  }
}

/**
 * Related by reference, as the backup took them (backup/actions): the ClusterRoleBindings of
 * restored ServiceAccounts, then whatever restored items name (PriorityClass, RuntimeClass,
 * StorageClass, ClusterRole), and what those name in turn.
 */
function addReferenced(pl: Planner, items: readonly ArchivedItem[]): void {
  const { selected } = pl;
  const accounts = new Set<string>();
  for (const p of selected.values()) {
    if (p.groupResource === GR.serviceAccounts) accounts.add(`${p.sourceNamespace}/${p.sourceName}`).add(`${p.sourceNamespace}/*`);
  }
  const clusterItems = new Map<string, ArchivedItem>();
  const queue = [...selected.values()];
  const pullIn = (it: ArchivedItem): void => {
    if (!pl.related(it.groupResource, it.name)) return;
    const p = pl.toPlanned(it);
    if (selected.add(p)) queue.push(p);
  };
  for (const it of items) {
    if (it.namespace !== undefined || neverRestoredReason(it.groupResource) !== undefined) continue;
    clusterItems.set(itemKey(it.groupResource, '', it.name), it);
    if (accounts.size > 0 && (it.picked?.binds ?? []).some((a) => accounts.has(a))) pullIn(it);
  }
  for (let p = queue.pop(); p !== undefined; p = queue.pop()) {
    for (const need of p.archived?.picked?.needs ?? []) {
      const it = clusterItems.get(need);
      if (it !== undefined) pullIn(it);
    }
  }
}

/** Namespaces: those the filters select, and every namespace a restored item lives in. Returns target namespace -> its item. */
function planNamespaces(pl: Planner, namespaceItems: readonly ArchivedItem[]): Map<string, PlannedItem> {
  const { req, selected } = pl;
  const namespaces = new Map<string, PlannedItem>();
  const nsArchived = new Map(namespaceItems.map((it) => [it.name, it]));
  const nsSelectable = req.resources.shouldInclude(pl.describe('namespaces'));
  for (const it of namespaceItems) {
    // Names that narrow every resource select like a label selector: Namespace objects come with their items only.
    if (nsSelectable && req.namespaces.shouldInclude(it.name) && pl.labelsMatch(it) && !req.names.narrowsEveryResource) {
      const p = pl.toPlanned(it);
      // Two namespaces mapped onto one: their items merge, and the first Namespace object stands for both.
      if (namespaces.has(p.name)) continue;
      selected.add(p);
      namespaces.set(p.name, p);
    }
  }
  for (const p of [...selected.values()]) {
    if (p.sourceNamespace === '' || namespaces.has(p.namespace)) continue;
    const archivedNs = nsArchived.get(p.sourceNamespace);
    const np = archivedNs !== undefined ? pl.toPlanned(archivedNs) : synthesizeNamespace(p.sourceNamespace, p.namespace, pl.describe('namespaces'));
    selected.add(np);
    namespaces.set(np.name, np);
  }
  return namespaces;
}

/**
 * Controller-owned items whose controller is in the restore too get `owner`: the executor decides
 * once it knows what became of the owner.
 */
function linkOwners(selected: PlannedItems<PlannedItem>): void {
  const owned = [...selected.values()].filter((p) => p.archived?.picked?.controllers !== undefined);
  if (owned.length === 0) return;
  const kinds = ownerKinds(owned.map((p) => p.archived?.picked?.controllers ?? []));
  const candidates = function* (): Generator<OwnerCandidate & { planned: PlannedItem }> {
    for (const p of selected.values()) {
      if (p.archived !== undefined) yield { apiVersion: p.archived.apiVersion, kind: p.archived.kind, namespace: p.sourceNamespace, name: p.sourceName, planned: p };
    }
  };
  const owners = ownerIndex(candidates(), kinds);
  for (const p of owned) {
    const found = restoredController(p.archived?.picked?.controllers, p.sourceNamespace, owners);
    if (found !== undefined && found.owner.planned !== p) p.owner = { owner: found.owner.planned, label: found.label };
  }
}

/** The selected items in tiers (priorities), each tier's items by target namespace and name. */
function orderPlan(pl: Planner): RestorePlan['tiers'] {
  const groups = new Map<string, PlannedItem[]>();
  for (const p of pl.selected.values()) {
    const list = groups.get(p.groupResource) ?? [];
    list.push(p);
    groups.set(p.groupResource, list);
  }
  return orderTiers(groups.keys(), pl.req.priorities, pl.describe).map((tier) => ({
    tier,
    items: tier.groupResources
      .flatMap((gr) => groups.get(gr) ?? [])
      .sort((a, b) => (a.namespace === b.namespace ? cmp(a.name, b.name) : cmp(a.namespace, b.namespace))),
  }));
}

/** RestorePlan.planAdditional: plans an archive item an action names, on demand. */
function additionalPlanner(pl: Planner, items: readonly ArchivedItem[]): RestorePlan['planAdditional'] {
  const { req, selected } = pl;
  // Every archive item by key, only for actions' additional items: most restores never build it.
  let archived: Map<string, ArchivedItem> | undefined;
  const archivedIndex = (): Map<string, ArchivedItem> => (archived ??= new Map(items.map((it) => [itemKey(it.groupResource, it.namespace ?? '', it.name), it])));
  return (groupResource, namespace, name) => {
    if (neverRestoredReason(groupResource) !== undefined) return undefined;
    // Actions may name an item by its namespace in the backup or by the namespace it is restored into.
    const sources = [namespace, ...[...req.namespaceMapping].filter(([, to]) => to === namespace).map(([from]) => from)];
    for (const src of sources) {
      const have = selected.get(groupResource, src, name);
      if (have !== undefined) return have;
      const it = archivedIndex().get(itemKey(groupResource, src, name));
      if (it !== undefined) {
        const p = pl.toPlanned(it);
        selected.add(p);
        return p;
      }
    }
    return undefined;
  };
}

/** Which copy of an item to restore, and at which version (see buildPlan). */
export function chooseCopy(
  stored: ArchivedItem, target: ApiResource | undefined, alternates: readonly ArchivedItem[] | undefined,
): { copy: ArchivedItem; version: string; change?: VersionChange } {
  const storedVersion = versionOfApiVersion(stored.apiVersion);
  // Not served now: its CRD may be restored by this run, at the versions the backup knew.
  if (target === undefined) return { copy: stored, version: storedVersion };
  const served = servedVersions(target);
  const at = (v: string): ArchivedItem | undefined =>
    storedVersion === v ? stored : alternates?.find((a) => versionOfApiVersion(a.apiVersion) === v);
  const chosen = at(target.version) ?? (served.includes(storedVersion) ? stored : undefined) ?? served.map(at).find((c) => c !== undefined);
  if (chosen === stored) return { copy: stored, version: storedVersion };
  if (chosen !== undefined) {
    const version = versionOfApiVersion(chosen.apiVersion);
    return { copy: chosen, version, change: { stored: stored.apiVersion, used: chosen.apiVersion, copy: true, storedServed: served.includes(storedVersion) } };
  }
  return { copy: stored, version: target.version, change: { stored: stored.apiVersion, used: target.apiVersion, copy: false, storedServed: false } };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function synthesizeNamespace(source: string, target: string, resource: ResourceLike): PlannedItem {
  return {
    groupResource: 'namespaces',
    sourceNamespace: '',
    sourceName: source,
    namespace: '',
    name: target,
    ref: { group: '', version: 'v1', resource: 'namespaces', namespaced: false },
    resource,
    archived: undefined,
    synthesized: true,
    restored: undefined,
  };
}

/** Refuses an item stored as namespaced when its resource is cluster-scoped, or the reverse. */
function checkScopes(items: readonly ArchivedItem[], byGr: ReadonlyMap<string, ApiResource>, crds: ReadonlyMap<string, ArchivedItem>): void {
  const crdScope = new Map<string, boolean>();
  for (const [gr, crd] of crds) {
    const s = crd.picked?.serves;
    if (s !== undefined) crdScope.set(gr, s.namespaced);
  }
  for (const it of items) {
    const namespaced = byGr.get(it.groupResource)?.namespaced ?? crdScope.get(it.groupResource);
    if (namespaced === undefined || namespaced === (it.namespace !== undefined)) continue;
    const where = it.namespace !== undefined ? `under namespace "${it.namespace}"` : 'as cluster-scoped';
    throw new RestoreRefusedError(
      'scope-mismatch',
      `entry ${spilledPath(it)}: ${it.groupResource} is ${namespaced ? 'namespaced' : 'cluster-scoped'} but the item is stored ${where}; refused`,
    );
  }
}

/**
 * Refuses a namespace mapping that would restore two items onto one object. Items are unique by
 * their source key, so only namespaced items whose target namespace receives two source namespaces
 * can collide (Namespace items are merged when they are planned): only those are checked.
 */
function checkTargetsUnique(items: readonly PlannedItem[]): void {
  const sources = new Map<string, Set<string>>();
  for (const p of items) {
    if (p.sourceNamespace === '') continue;
    const s = sources.get(p.namespace) ?? new Set<string>();
    s.add(p.sourceNamespace);
    sources.set(p.namespace, s);
  }
  const seen = new Map<string, PlannedItem>();
  for (const p of items) {
    if (p.sourceNamespace === '' || (sources.get(p.namespace)?.size ?? 0) < 2) continue;
    const target = itemKey(p.groupResource, p.namespace, p.name);
    const other = seen.get(target);
    if (other !== undefined) {
      const a = displayName(other.sourceNamespace, other.sourceName);
      const b = displayName(p.sourceNamespace, p.sourceName);
      throw new RestoreRefusedError(
        'mapping-collision',
        `namespaceMapping restores ${p.groupResource} ${a} and ${b} onto the same object ${displayName(p.namespace, p.name)}; refused`,
      );
    }
    seen.set(target, p);
  }
}
