// Plugin discovery: finds executables under --plugin-dir (recursively), and checks what each one
// lists: names must be `domain/name`, kinds known, and no (kind, name) served twice.
import fs from 'node:fs/promises';
import path from 'node:path';
import { PLUGIN_NAME_PATTERN, type PluginKind } from '../api/index.js';
import type { ListedPlugin } from '../grpc/index.js';

export interface RegisteredPlugin {
  kind: PluginKind;
  name: string;
  /** The executable serving it (its path, or the built-in command line). */
  executable: string;
}

/** Directories skipped while scanning: dependencies and hidden directories hold no plugins. */
function skipDir(name: string): boolean {
  return name === 'node_modules' || name.startsWith('.');
}

/**
 * Every executable regular file under `dirs`, recursively, as real paths, sorted. Symlinks are
 * followed (each real file counted once); a missing directory is an error naming it.
 */
export async function scanPluginDirs(dirs: string[]): Promise<string[]> {
  const found = new Set<string>();
  const visited = new Set<string>();
  const walk = async (dir: string): Promise<void> => {
    const real = await fs.realpath(dir);
    if (visited.has(real)) return;
    visited.add(real);
    for (const entry of await fs.readdir(real, { withFileTypes: true })) {
      const full = path.join(real, entry.name);
      let st;
      try {
        st = await fs.stat(full);
      } catch {
        continue; // dangling symlink
      }
      if (st.isDirectory()) {
        if (!skipDir(entry.name)) await walk(full);
      } else if (st.isFile() && (st.mode & 0o111) !== 0) {
        found.add(await fs.realpath(full));
      }
    }
  };
  for (const dir of dirs) {
    try {
      await walk(path.resolve(dir));
    } catch (err) {
      throw new Error(`cannot scan plugin directory ${dir}: ${(err as Error).message}`);
    }
  }
  return [...found].sort();
}

/** The plugins an executable listed, and a problem for each bad entry. */
export function validateListing(executable: string, listed: ListedPlugin[]): { plugins: RegisteredPlugin[]; problems: string[] } {
  const plugins: RegisteredPlugin[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  if (listed.length === 0) problems.push(`plugin executable ${executable} lists no plugins`);
  for (const p of listed) {
    if (p.kind === undefined) {
      problems.push(`plugin executable ${executable} lists "${p.name}" with unknown kind ${p.rawKind}`);
      continue;
    }
    if (!PLUGIN_NAME_PATTERN.test(p.name)) {
      problems.push(
        `plugin executable ${executable} lists ${p.kind} "${p.name}", which is not a valid plugin name ` +
          '(expected domain/name, lowercase, e.g. example.com/my-plugin)',
      );
      continue;
    }
    const key = `${p.kind} ${p.name}`;
    if (seen.has(key)) {
      problems.push(`plugin executable ${executable} lists ${key} twice`);
      continue;
    }
    seen.add(key);
    plugins.push({ kind: p.kind, name: p.name, executable });
  }
  return { plugins, problems };
}

/** Joins every executable's plugins; a (kind, name) served by two executables is a problem. */
export function mergeRegistrations(lists: RegisteredPlugin[][]): { plugins: RegisteredPlugin[]; problems: string[] } {
  const byKey = new Map<string, RegisteredPlugin>();
  const problems: string[] = [];
  for (const p of lists.flat()) {
    const key = `${p.kind} ${p.name}`;
    const prior = byKey.get(key);
    if (prior !== undefined) {
      problems.push(`duplicate plugin: ${key} is served by both ${prior.executable} and ${p.executable}`);
      continue;
    }
    byKey.set(key, p);
  }
  return { plugins: [...byKey.values()], problems };
}
