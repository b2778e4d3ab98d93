// Which objects a bulk command (delete, pause, unpause) acts on: the named ones, those matching
// `--selector`, or `--all` (exactly one of the three, as Velero's), and the confirmation a
// destructive one asks for first.
import readline from 'node:readline';
import { Option, type Command } from 'commander';
import { CliError, UsageError } from './errors.js';
import { parseSelector } from './flags.js';

export interface SelectionFlags {
  selector?: string;
  all?: boolean;
}

/** Adds `-l, --selector` and `--all`; `plural` names the objects ("backups"). */
export function addSelectionFlags(cmd: Command, plural: string): Command {
  return cmd
    .addOption(new Option('-l, --selector <selector>', `all ${plural} with these labels, e.g. stowage.dev/schedule-name=nightly`))
    .addOption(new Option('--all', `all ${plural} in the namespace`));
}

export interface Selectable<T> {
  /** Singular noun for messages ("backup"). */
  kind: string;
  plural: string;
  namespace: string;
  get(name: string): Promise<T>;
  list(labelSelector?: string): Promise<T[]>;
}

/** Checks the flags before anything is asked of the cluster: exactly one of names, --selector, --all. */
export function checkSelection(names: readonly string[], f: SelectionFlags, kind: string, plural: string): void {
  const given = [names.length > 0, f.selector !== undefined, f.all === true].filter(Boolean).length;
  if (given === 0) throw new UsageError(`name the ${plural}, or give --selector SELECTOR or --all`);
  if (given > 1) throw new UsageError(`give ${kind} names, --selector or --all, not more than one of them`);
  if (f.selector !== undefined) parseSelector('selector', f.selector);
}

/** The selected objects, by name; a named one that does not exist fails the command before anything is done. */
export async function selectObjects<T extends { metadata: { name: string } }>(names: readonly string[], f: SelectionFlags, s: Selectable<T>): Promise<T[]> {
  checkSelection(names, f, s.kind, s.plural);
  if (names.length > 0) {
    const items: T[] = [];
    for (const n of new Set(names)) items.push(await s.get(n));
    return items;
  }
  const items = await s.list(f.selector);
  return [...items].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
}

/** What a selection is, for prompts and "nothing matched" lines. */
export function selectionText(f: SelectionFlags, plural: string, namespace: string): string {
  return f.selector !== undefined ? `${plural} matching "${f.selector}" in namespace ${namespace}` : `${plural} in namespace ${namespace}`;
}

/** Refuses early (exit 2) when a prompt would be needed but stdin is not a terminal. */
export function checkConfirmable(confirmFlag: boolean | undefined): void {
  if (confirmFlag !== true && process.stdin.isTTY !== true) {
    throw new UsageError('refusing to delete without confirmation: stdin is not a terminal, so pass --confirm');
  }
}

export async function confirm(question: string): Promise<boolean> {
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await new Promise<string>((resolve) => rl.question(`${question} [y/N] `, resolve));
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** Asks `question` unless --confirm was given; a "no" stops the command (exit 1). */
export async function confirmOrStop(confirmFlag: boolean | undefined, question: string): Promise<void> {
  if (confirmFlag === true) return;
  if (!(await confirm(question))) throw new CliError('nothing deleted');
}

/** `backup "a"` or `3 backups (a, b, c)`. */
export function namesText(kind: string, plural: string, names: readonly string[]): string {
  return names.length === 1 ? `${kind} "${names[0]}"` : `${names.length} ${plural} (${names.join(', ')})`;
}
