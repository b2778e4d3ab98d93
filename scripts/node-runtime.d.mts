// Types for node-runtime.mjs (plain JavaScript so that test.mjs and run-ts.mjs load it without tsx).
export const RUNTIME_NODE_VERSION: string;
export const RUNTIME_NODE_MAJOR: number;
export function cacheBase(env?: NodeJS.ProcessEnv): string;
export function runtimeNodeDir(env?: NodeJS.ProcessEnv, arch?: string): string;
export function npmErrorOf(stderr: string | undefined): string;
export function ensureRuntimeNode(opts?: { env?: NodeJS.ProcessEnv; log?: (line: string) => void }): string;
export function runtimeEnv(nodeBin: string, env?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
