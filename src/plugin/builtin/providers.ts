// Other names of the built-in plugins: Velero's provider names (`aws`, which Velero itself reads as
// `velero.io/aws`), so a Velero BackupStorageLocation works unchanged. The server hands this table
// to the plugin pool, which resolves a location's provider through it; a name that a plugin
// registers itself is never taken as an alias.
import { AWS_PLUGIN, FILESYSTEM_PLUGIN } from './names.js';

export const PROVIDER_ALIASES: Readonly<Record<string, string>> = {
  aws: AWS_PLUGIN,
  'velero.io/aws': AWS_PLUGIN,
  filesystem: FILESYSTEM_PLUGIN,
};
