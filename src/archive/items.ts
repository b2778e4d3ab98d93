// Item-level checks of the reader: each item's JSON must agree with the path it is stored under, and
// every copy of one object must hold the same bytes.
import type { KubeObject } from '../plugin/api/items.js';
import { ArchiveError } from './errors.js';
import { jsonSyntaxProblem } from '../util/errors.js';
import { BUILTIN_KINDS } from './kinds.js';
import { groupOfApiVersion, itemPath, splitGroupResource, versionOfApiVersion, type ParsedItemPath } from './paths.js';

/** A Kubernetes object read from an archive: the object plugins are handed, nothing archive-specific. */
export type ArchiveObject = KubeObject;

/**
 * One copy of an item as the reader keeps it, without the object: where it was read from, what it
 * is, and a checksum. The reader checked that the object agrees with its path.
 */
export interface ItemIdentity {
  /** The tar path this copy was read from (the preferred-version copy's, when there is one). */
  path: string;
  groupResource: string;
  /** Set for namespaced items. */
  namespace?: string;
  name: string;
  /** The version directory (`v1-preferredversion`, `v2beta1`), absent for the classic copy. */
  versionDir?: string;
  apiVersion: string;
  kind: string;
  /** SHA-256 (hex) of the entry's bytes. */
  sha256: string;
  bytes: number;
}

/**
 * An item's identity without its path and digest, which an index need not keep: the path follows
 * from the rest (itemPathOf), and the digest only pairs an object's copies while the archive is read.
 */
export type ItemKey = Omit<ItemIdentity, 'path' | 'sha256'>;

/** The tar path of the copy an ItemKey names (the classic one when it has no version directory). */
export function itemPathOf(it: Pick<ItemIdentity, 'groupResource' | 'namespace' | 'name' | 'versionDir'>): string {
  return itemPath(it.groupResource, it.namespace, it.name, it.versionDir);
}

/** An item read whole: its identity and the parsed object. */
export interface ArchiveItem extends ItemIdentity {
  object: ArchiveObject;
}

/** What the path checks look at in an object. */
export interface ObjectHead {
  apiVersion: string;
  kind: string;
  name: string;
  /** '' for an object without a namespace. */
  namespace: string;
}

export function headOf(obj: ArchiveObject): ObjectHead {
  return { apiVersion: obj.apiVersion, kind: obj.kind, name: obj.metadata.name, namespace: obj.metadata.namespace ?? '' };
}

const CRD_RESOURCE = 'customresourcedefinitions.apiextensions.k8s.io';

export function parseItemJson(path: string, data: Buffer): ArchiveObject {
  let value: unknown;
  try {
    value = JSON.parse(data.toString('utf8'));
  } catch (err) {
    throw new ArchiveError('invalid-json', `entry ${path} is not valid JSON: ${jsonSyntaxProblem(err)}`, path);
  }
  const bad = (what: string): never => {
    throw new ArchiveError('invalid-item', `entry ${path} is not a Kubernetes object: ${what}`, path);
  };
  if (!isRecord(value)) return bad('not a JSON object');
  if (typeof value.apiVersion !== 'string' || value.apiVersion === '') bad('apiVersion is missing');
  if (typeof value.kind !== 'string' || value.kind === '') bad('kind is missing');
  const md = value.metadata;
  if (!isRecord(md)) return bad('metadata is missing');
  if (typeof md.name !== 'string' || md.name === '') bad('metadata.name is missing');
  if (md.namespace !== undefined && typeof md.namespace !== 'string') bad('metadata.namespace is not a string');
  return value as ArchiveObject;
}

/** Throws 'path-mismatch' when the object's name, namespace, group or version disagree with its path. */
export function checkItemAgainstPath(path: string, p: ParsedItemPath, obj: ObjectHead): void {
  const mismatch = (msg: string): never => {
    throw new ArchiveError('path-mismatch', `entry ${path}: ${msg}`, path);
  };
  if (obj.name !== p.name) mismatch(`the object is named "${obj.name}" but its path names "${p.name}"`);
  const ns = obj.namespace;
  if (p.namespace !== undefined && ns !== p.namespace) {
    mismatch(ns === '' ? `the object has no namespace but its path puts it in namespace "${p.namespace}"`
      : `the object is in namespace "${ns}" but its path says namespace "${p.namespace}"`);
  }
  if (p.namespace === undefined && ns !== '') mismatch(`the path says cluster-scoped but the object is in namespace "${ns}"`);
  const group = splitGroupResource(p.groupResource).group;
  const objGroup = groupOfApiVersion(obj.apiVersion);
  if (objGroup !== group) {
    mismatch(`the object is a ${obj.kind} of API group "${objGroup}" but its path is under ${p.groupResource} (group "${group}")`);
  }
  if (p.version !== undefined && versionOfApiVersion(obj.apiVersion) !== p.version) {
    mismatch(`the object has apiVersion ${obj.apiVersion} but its path is under version directory ${p.versionDir ?? ''}`);
  }
}

/** The group-resource a CRD object defines and the kind it gives its objects, or undefined for another object. */
export function crdKindOf(groupResource: string, obj: ArchiveObject): readonly [string, string] | undefined {
  if (groupResource !== CRD_RESOURCE) return undefined;
  const spec = obj.spec;
  if (!isRecord(spec) || !isRecord(spec.names)) return undefined;
  const { group } = spec;
  const { plural, kind } = spec.names;
  if (typeof group !== 'string' || typeof plural !== 'string' || typeof kind !== 'string') return undefined;
  return [`${plural}.${group}`, kind];
}

/**
 * Checks that every item under one group-resource has that resource's kind: from the built-in table,
 * then `knownKinds` (the caller's discovery), then `crdKinds` (the CRDs found in the archive, in
 * archive order: the first one for a resource counts); an unknown resource must at least hold a single kind.
 */
export function checkKinds(
  items: Iterable<Pick<ItemIdentity, 'groupResource' | 'namespace' | 'name' | 'versionDir' | 'kind'>>,
  crdKinds: Iterable<readonly [string, string]>,
  knownKinds?: ReadonlyMap<string, string>,
): void {
  const table = new Map<string, string>(knownKinds ?? []);
  for (const [gr, kind] of BUILTIN_KINDS) table.set(gr, kind);
  for (const [gr, kind] of crdKinds) if (!table.has(gr)) table.set(gr, kind);
  const seen = new Map<string, Parameters<typeof itemPathOf>[0] & { kind: string }>();
  for (const it of items) {
    const expected = table.get(it.groupResource);
    if (expected !== undefined) {
      if (it.kind !== expected) {
        const path = itemPathOf(it);
        throw new ArchiveError('path-mismatch', `entry ${path}: the object is a ${it.kind} but ${it.groupResource} holds ${expected} objects`, path);
      }
      continue;
    }
    const first = seen.get(it.groupResource);
    if (first === undefined) seen.set(it.groupResource, it);
    else if (first.kind !== it.kind) {
      const path = itemPathOf(it);
      throw new ArchiveError('path-mismatch',
        `entry ${path}: the object is a ${it.kind} but ${itemPathOf(first)} under the same resource is a ${first.kind}`, path);
    }
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}
