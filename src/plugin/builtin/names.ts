// Names of the built-in plugins (kept apart from index.ts, so the server can resolve a provider
// without loading the stores themselves).
export const AWS_PLUGIN = 'stowage.dev/aws';
export const FILESYSTEM_PLUGIN = 'stowage.dev/filesystem';
