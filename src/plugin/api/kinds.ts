/** The kinds of plugin an executable can serve. */
export const PLUGIN_KINDS = [
  'ObjectStore',
  'BackupItemAction',
  'RestoreItemAction',
  'DeleteItemAction',
  'VolumeSnapshotter',
  'KeyManager',
] as const;
export type PluginKind = (typeof PLUGIN_KINDS)[number];

/** A plugin as listed by its executable. Names look like `domain/name` (`stowage.dev/aws`). */
export interface PluginInfo {
  kind: PluginKind;
  name: string;
}

/** `domain/name`: a DNS-like domain, one slash, a lowercase name. */
export const PLUGIN_NAME_PATTERN = /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?\/[a-z0-9]([a-z0-9._-]*[a-z0-9])?$/;

/** Identity of the run a call belongs to, carried in gRPC metadata so plugin logs reach its log. */
export interface RunIdentity {
  /** `backup`, `restore`, or a controller name. */
  kind: string;
  namespace: string;
  name: string;
}
