// Conversions between plugin/api types and the generated protobuf messages.
import type { KubeObject, PluginKind, ResourceIdentifier, ResourceSelector } from '../api/index.js';
import { PluginKind as WireKind } from '../../gen/stowage/plugin/v1/lister.js';
import type {
  ResourceIdentifier as WireIdentifier,
  ResourceSelector as WireSelector,
} from '../../gen/stowage/plugin/v1/common.js';
import { StatusError } from './errors.js';
import { jsonSyntaxProblem } from '../../util/errors.js';
import { status } from '@grpc/grpc-js';

const KIND_TO_WIRE: Record<PluginKind, WireKind> = {
  ObjectStore: WireKind.PLUGIN_KIND_OBJECT_STORE,
  BackupItemAction: WireKind.PLUGIN_KIND_BACKUP_ITEM_ACTION,
  RestoreItemAction: WireKind.PLUGIN_KIND_RESTORE_ITEM_ACTION,
  DeleteItemAction: WireKind.PLUGIN_KIND_DELETE_ITEM_ACTION,
  VolumeSnapshotter: WireKind.PLUGIN_KIND_VOLUME_SNAPSHOTTER,
  KeyManager: WireKind.PLUGIN_KIND_KEY_MANAGER,
};

export function kindToWire(kind: PluginKind): WireKind {
  return KIND_TO_WIRE[kind];
}

/** The api kind of a wire kind, or undefined for values this version does not know. */
export function kindFromWire(kind: WireKind): PluginKind | undefined {
  for (const [k, v] of Object.entries(KIND_TO_WIRE)) if (v === kind) return k as PluginKind;
  return undefined;
}

export function selectorToWire(s: ResourceSelector): WireSelector {
  return {
    includedNamespaces: [...s.includedNamespaces],
    excludedNamespaces: [...s.excludedNamespaces],
    includedResources: [...s.includedResources],
    excludedResources: [...s.excludedResources],
    labelSelector: s.labelSelector,
  };
}

export function selectorFromWire(s: WireSelector | undefined): ResourceSelector {
  return {
    includedNamespaces: s?.includedNamespaces ?? [],
    excludedNamespaces: s?.excludedNamespaces ?? [],
    includedResources: s?.includedResources ?? [],
    excludedResources: s?.excludedResources ?? [],
    labelSelector: s?.labelSelector ?? '',
  };
}

export function identifiersToWire(ids: ResourceIdentifier[]): WireIdentifier[] {
  return ids.map((id) => ({ groupResource: id.groupResource, namespace: id.namespace, name: id.name }));
}

export function identifiersFromWire(ids: WireIdentifier[]): ResourceIdentifier[] {
  return ids.map((id) => ({ groupResource: id.groupResource, namespace: id.namespace, name: id.name }));
}

export function encodeObject(obj: unknown): Buffer {
  return Buffer.from(JSON.stringify(obj));
}

/** The UTF-8 text of bytes received (a view of them, decoded without a copy of the bytes). */
export function textOf(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
}

/** Parses a Kubernetes object sent as JSON (bytes, or their text); `what` names the field in the error. */
export function decodeObject(bytes: Uint8Array | string, what: string): KubeObject {
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof bytes === 'string' ? bytes : textOf(bytes));
  } catch (err) {
    throw new StatusError(status.INVALID_ARGUMENT, `${what} is not valid JSON: ${jsonSyntaxProblem(err)}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new StatusError(status.INVALID_ARGUMENT, `${what} is not a JSON object`);
  }
  const meta = (parsed as { metadata?: unknown }).metadata;
  if (typeof meta !== 'object' || meta === null) {
    throw new StatusError(status.INVALID_ARGUMENT, `${what} has no metadata`);
  }
  return parsed as KubeObject;
}
