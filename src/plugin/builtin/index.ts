// The built-in plugins served by `stowage run-plugins`. The S3 store is loaded on first Init, so a
// process that only serves the filesystem store starts without loading the AWS SDK.
import type { ObjectStore } from '../api/index.js';
import type { PluginServeOptions } from '../sdk/index.js';
import { FilesystemObjectStore } from './filesystem.js';
import { AWS_PLUGIN, FILESYSTEM_PLUGIN } from './names.js';

export { AWS_PLUGIN, FILESYSTEM_PLUGIN };
export { PROVIDER_ALIASES } from './providers.js';

export function builtinPlugins(): PluginServeOptions {
  return {
    objectStores: {
      [AWS_PLUGIN]: async (): Promise<ObjectStore> => new (await import('./aws.js')).AwsObjectStore(),
      [FILESYSTEM_PLUGIN]: () => new FilesystemObjectStore(),
    },
  };
}

export { FilesystemObjectStore };
