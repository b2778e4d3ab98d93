// What the storage functions need from the server: its client and namespace (Secrets of keys and
// credentials live there), a scratch directory (credential files for plugins), and the plugin pool
// with the server log for the functions that take a plugin handle of their own.
import type winston from 'winston';
import type { DynamicClient } from '../kube/index.js';
import type { PluginPool } from '../plugin/host/index.js';

export interface StoreContext {
  client: DynamicClient;
  /** The server's namespace, where the Secrets of keys and credentials are. */
  namespace: string;
  scratchDir: string;
}

export interface StorageContext extends StoreContext {
  plugins: PluginPool;
  logger: winston.Logger;
}
