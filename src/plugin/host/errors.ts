// Errors the plugin host raises. Messages name the plugin, its executable, and what failed.

/** A call into a plugin failed. `code` is 'NotFound' for a missing object, as with a local store. */
export class PluginCallError extends Error {
  override readonly name = 'PluginCallError';
  constructor(
    message: string,
    readonly code: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A plugin executable kept dying: N consecutive restarts failed. */
export class PluginCrashLoopError extends Error {
  override readonly name = 'PluginCrashLoopError';
  constructor(
    message: string,
    readonly stderr: string[],
  ) {
    super(message);
  }
}

/** Discovery found problems: executables that would not start or list, bad or duplicate names. */
export class PluginRegistryError extends Error {
  override readonly name = 'PluginRegistryError';
  constructor(readonly problems: string[]) {
    super(`plugin discovery failed:\n${problems.map((p) => `- ${p}`).join('\n')}`);
  }
}
