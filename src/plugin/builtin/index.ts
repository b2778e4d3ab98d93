// The built-in plugins served by `stowage run-plugins`. The S3 store is loaded on first Init, so a
// process that only serves the filesystem store starts without loading the AWS SDK.
import type { ObjectStore } from '../api/index.js';
import type { PluginServeOptions } from '../sdk/index.js';
import { FilesystemObjectStore } from './filesystem.js';

export const AWS_PLUGIN = 'stowage.dev/aws';
export const FILESYSTEM_PLUGIN = 'stowage.dev/filesystem';

export function builtinPlugins(): PluginServeOptions {
  return {
    objectStores: {
      [AWS_PLUGIN]: async (): Promise<ObjectStore> => new (await import('./aws.js')).AwsObjectStore(),
      [FILESYSTEM_PLUGIN]: () => new FilesystemObjectStore(),
    },
  };
}

export { FilesystemObjectStore };
