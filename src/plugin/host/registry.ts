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

export interface PluginScan {
  /** Executable regular files that passed the checks, as real paths, sorted. */
  executables: string[];
  /** One message per file or directory refused, naming it and why. */
  refused: string[];
}

export interface ScanOptions {
  /** The uid plugins must belong to (or root). Default: this process's. */
  uid?: number;
}

/** Whether `inner` is `outer` or below it (both real paths). */
function within(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Why a plugin file or directory is not trusted, or undefined. Anyone who can write it can make this
 * server run their code: so it must not be group- or world-writable, and must belong to the
 * server's own user or to root (root can change the server itself anyway, and image layers and
 * read-only mounts are root-owned).
 */
function untrusted(what: string, st: { mode: number; uid: number }, uid: number): string | undefined {
  if ((st.mode & 0o022) !== 0) {
    const who = (st.mode & 0o002) !== 0 ? 'world' : 'group';
    return `${what} is ${who}-writable (mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}); make it writable by its owner only (chmod go-w)`;
  }
  if (st.uid !== uid && st.uid !== 0) return `${what} is owned by uid ${st.uid}, not by this server's uid ${uid} or root`;
  return undefined;
}

/**
 * Every executable regular file under `dirs`, recursively, as real paths, sorted. Symlinks are
 * followed while they stay inside the plugin directory (each real file counted once); one that
 * resolves outside it is refused, as are files and subdirectories that others could write (see
 * `untrusted`). A missing directory is an error naming it.
 */
export async function scanPluginDirs(dirs: string[], opts: ScanOptions = {}): Promise<PluginScan> {
  const uid = opts.uid ?? process.getuid?.() ?? 0;
  const found = new Set<string>();
  const refused: string[] = [];
  const visited = new Set<string>();
  const walk = async (root: string, real: string): Promise<void> => {
    if (visited.has(real)) return;
    visited.add(real);
    // The configured directory itself is the operator's mount point, not checked: a Kubernetes
    // emptyDir (where init containers copy plugins) is created 0777, and the server mounts it
    // read-only. What is inside it is.
    const problem = real === root ? undefined : untrusted(`plugin directory ${real}`, await fs.stat(real), uid);
    if (problem !== undefined) {
      refused.push(problem);
      return;
    }
    for (const entry of await fs.readdir(real, { withFileTypes: true })) {
      const full = path.join(real, entry.name);
      let target = full;
      if (entry.isSymbolicLink()) {
        try {
          target = await fs.realpath(full);
        } catch {
          continue; // dangling symlink
        }
        if (!within(root, target)) {
          refused.push(`plugin symlink ${full} resolves to ${target}, outside the plugin directory ${root}; copy the plugin into the directory instead`);
          continue;
        }
      }
      const st = await fs.stat(target);
      if (st.isDirectory()) {
        if (!skipDir(entry.name)) await walk(root, target);
      } else if (st.isFile() && (st.mode & 0o111) !== 0) {
        const why = untrusted(`plugin file ${target}`, st, uid);
        if (why !== undefined) refused.push(why);
        else found.add(target);
      }
    }
  };
  for (const dir of dirs) {
    try {
      const root = await fs.realpath(path.resolve(dir));
      await walk(root, root);
    } catch (err) {
      throw new Error(`cannot scan plugin directory ${dir}: ${(err as Error).message}`);
    }
  }
  return { executables: [...found].sort(), refused: [...new Set(refused)].sort() };
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
