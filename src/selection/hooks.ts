// Which backup hooks apply to a pod, and what they run: spec.hooks (Velero's BackupHooks, checked
// field by field at validation) and the pod's own annotations, Velero's names or Stowage's. Pure:
// the backup engine (backup/hooks.ts) runs what this resolves, through hooks/exec.ts.
import type { BackupHooks, ExecHook, LabelSelector } from '../apis/v1/index.js';
import { tryParseDuration } from '../util/duration.js';
import { namespaceEntryProblem, namespaceFilter, resourceFilter, RESOURCE_ENTRY_RE, type NamespaceFilter, type ResourceFilter } from './filters.js';
import { labelSelectorMatches, validateLabelSelector } from './labels.js';

export type HookPhase = 'pre' | 'post';
export type HookOnError = 'Fail' | 'Continue';
export const HOOK_ON_ERROR: readonly HookOnError[] = ['Fail', 'Continue'];
/** Velero's default: a hook with no timeout may take 30 seconds. */
export const DEFAULT_HOOK_TIMEOUT_MS = 30_000;

/** One command to run in a pod, resolved: container still unset means the pod's first container. */
export interface PodHook {
  phase: HookPhase;
  /** The spec entry's name, or the annotation prefix it came from. */
  name: string;
  source: 'annotation' | 'spec';
  container: string | undefined;
  command: string[];
  onError: HookOnError;
  timeoutMs: number;
}

/** The hooks of one phase for one pod, or why its annotations cannot say (the pod then fails, as a Fail hook would). */
export type PhaseHooks = { hooks: PodHook[] } | { error: string };

/** Annotation prefixes, per phase, in the order they are read: Velero's first, Stowage's second. */
const ANNOTATION_PREFIXES: Record<HookPhase, readonly string[]> = {
  pre: ['pre.hook.backup.velero.io', 'pre.hook.backup.stowage.dev'],
  post: ['post.hook.backup.velero.io', 'post.hook.backup.stowage.dev'],
};
/** Velero's oldest form, without a phase: a pre hook, read only when no phased pre annotation is set. */
const LEGACY_PREFIX = 'hook.backup.velero.io';
const ANNOTATION_KEYS = ['container', 'command', 'on-error', 'timeout'] as const;

/** Velero's command forms: a JSON array of strings, or one string taken as the whole command (no shell). */
export function parseHookCommand(value: string): string[] | { error: string } {
  if (!value.trimStart().startsWith('[')) return [value];
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (err) {
    return { error: `starts with "[" but is not a JSON array: ${(err as Error).message}` };
  }
  if (!Array.isArray(parsed) || !parsed.every((x): x is string => typeof x === 'string')) return { error: 'is not a JSON array of strings' };
  return parsed;
}

/** Why a command cannot run, or undefined: it needs an executable. */
function commandProblem(command: readonly unknown[] | undefined): string | undefined {
  if (command === undefined || command.length === 0) return 'is empty: give the executable and its arguments';
  if (!command.every((c) => typeof c === 'string')) return 'must be a list of strings';
  if ((command[0] as string).trim() === '') return 'names no executable (its first entry is empty)';
  return undefined;
}

function onErrorOf(value: string | undefined, at: string): HookOnError | { error: string } {
  if (value === undefined || value === '') return 'Fail';
  return (HOOK_ON_ERROR as readonly string[]).includes(value) ? (value as HookOnError) : { error: `${at}: "${value}" is not an onError mode (use Fail or Continue)` };
}

/** A timeout in ms; unset or zero is the 30 s default, as in Velero. */
function timeoutOf(value: string | undefined, at: string): number | { error: string } {
  if (value === undefined || value === '') return DEFAULT_HOOK_TIMEOUT_MS;
  const t = tryParseDuration(value, at);
  if ('error' in t) return t;
  if (t.ms < 0) return { error: `${at}: "${value}" is negative` };
  return t.ms === 0 ? DEFAULT_HOOK_TIMEOUT_MS : t.ms;
}

/** Every problem in spec.hooks (`at` is `spec.hooks` or `spec.template.hooks`), each naming its field. */
export function backupHookSpecErrors(hooks: BackupHooks | undefined | null, at: string): string[] {
  const errors: string[] = [];
  (hooks?.resources ?? []).forEach((r, i) => {
    const here = `${at}.resources[${i}]`;
    if (typeof r.name !== 'string' || r.name.trim() === '') errors.push(`${here}.name: every hook entry needs a name (it names the hook in the log and in errors)`);
    for (const field of ['includedNamespaces', 'excludedNamespaces'] as const) {
      (r[field] ?? []).forEach((ns, j) => {
        const why = ns === '*' ? undefined : namespaceEntryProblem(ns);
        if (why !== undefined) errors.push(`${here}.${field}[${j}]: "${ns}" ${why}`);
      });
    }
    for (const field of ['includedResources', 'excludedResources'] as const) {
      (r[field] ?? []).forEach((e, j) => {
        if (e !== '*' && !RESOURCE_ENTRY_RE.test(e)) errors.push(`${here}.${field}[${j}]: "${e}" is not a resource name`);
      });
    }
    if (!appliesToPods(r)) {
      errors.push(`${here}.includedResources: hooks run only in pods, and ${JSON.stringify(r.includedResources ?? [])} less ${JSON.stringify(r.excludedResources ?? [])} leaves pods out, so this entry would never run; include pods (or leave the field empty)`);
    }
    errors.push(...validateLabelSelector(r.labelSelector, `${here}.labelSelector`));
    for (const phase of ['pre', 'post'] as const) {
      (r[phase] ?? []).forEach((h, j) => errors.push(...execHookErrors(h.exec, `${here}.${phase}[${j}].exec`)));
    }
  });
  return errors;
}

function execHookErrors(exec: ExecHook | undefined, at: string): string[] {
  if (exec === undefined || exec === null) return [`${at}: each hook needs exec (Velero's only hook type for backups)`];
  const errors: string[] = [];
  const cmd = commandProblem(exec.command);
  if (cmd !== undefined) errors.push(`${at}.command ${cmd}`);
  const onError = onErrorOf(exec.onError, `${at}.onError`);
  if (typeof onError !== 'string') errors.push(onError.error);
  const timeout = timeoutOf(exec.timeout, `${at}.timeout`);
  if (typeof timeout !== 'number') errors.push(timeout.error);
  return errors;
}

const PODS = { resource: 'pods', group: '', kind: 'Pod', singularName: 'pod', shortNames: ['po'] };
function appliesToPods(r: { includedResources?: string[]; excludedResources?: string[] }): boolean {
  return resourceFilter(r.includedResources, r.excludedResources).shouldInclude(PODS);
}

interface CompiledEntry {
  name: string;
  namespaces: NamespaceFilter;
  resources: ResourceFilter;
  labelSelector: LabelSelector | undefined;
  pre: PodHook[];
  post: PodHook[];
}

/** A pod as the resolution needs it. */
export interface HookPod {
  metadata: { namespace?: string | undefined; labels?: Record<string, string> | undefined; annotations?: Record<string, string> | undefined };
}

export interface BackupHookPlan {
  /** Whether any hook could apply to any pod (spec entries exist); annotations are read per pod anyway. */
  readonly hasSpecHooks: boolean;
  /** The pod's hooks of `phase`: its annotations' if it has them for that phase (they win, as in Velero), else the spec's that match it. */
  forPod(pod: HookPod, phase: HookPhase): PhaseHooks;
}

/** spec.hooks compiled for matching (validated first: backupHookSpecErrors). */
export function compileBackupHooks(hooks: BackupHooks | undefined | null): BackupHookPlan {
  const entries: CompiledEntry[] = (hooks?.resources ?? []).map((r) => ({
    name: r.name,
    namespaces: namespaceFilter(r.includedNamespaces, r.excludedNamespaces),
    resources: resourceFilter(r.includedResources, r.excludedResources),
    labelSelector: r.labelSelector,
    pre: (r.pre ?? []).map((h) => specHook(r.name, 'pre', h.exec)),
    post: (r.post ?? []).map((h) => specHook(r.name, 'post', h.exec)),
  }));
  return {
    hasSpecHooks: entries.some((e) => e.pre.length > 0 || e.post.length > 0),
    forPod(pod, phase) {
      const fromAnnotations = annotationHooks(pod.metadata.annotations ?? {}, phase);
      if (fromAnnotations !== undefined) return fromAnnotations;
      const ns = pod.metadata.namespace ?? '';
      const hooks = entries
        .filter((e) => e.namespaces.shouldInclude(ns) && e.resources.shouldInclude(PODS) && labelSelectorMatches(e.labelSelector, pod.metadata.labels))
        .flatMap((e) => e[phase]);
      return { hooks };
    },
  };
}

function specHook(name: string, phase: HookPhase, exec: ExecHook): PodHook {
  const onError = onErrorOf(exec.onError, '');
  const timeout = timeoutOf(exec.timeout, '');
  return {
    phase, name, source: 'spec', container: exec.container === undefined || exec.container === '' ? undefined : exec.container,
    command: [...exec.command], onError: typeof onError === 'string' ? onError : 'Fail', timeoutMs: typeof timeout === 'number' ? timeout : DEFAULT_HOOK_TIMEOUT_MS,
  };
}

/**
 * The phase's hook from annotations: undefined when none is set for it. Velero's and Stowage's names
 * both set for one phase is refused (which would win is not obvious), as are values that do not parse.
 */
export function annotationHooks(annotations: Readonly<Record<string, string>>, phase: HookPhase): PhaseHooks | undefined {
  const set = ANNOTATION_PREFIXES[phase].filter((p) => (annotations[`${p}/command`] ?? '') !== '');
  if (set.length > 1) return { error: `the pod has both ${set.map((p) => `${p}/command`).join(' and ')}; keep one of them` };
  let prefix = set[0];
  if (prefix === undefined && phase === 'pre' && (annotations[`${LEGACY_PREFIX}/command`] ?? '') !== '') prefix = LEGACY_PREFIX;
  if (prefix === undefined) {
    // Settings without a command: a hook half written, which would otherwise do nothing silently.
    const stray = ANNOTATION_PREFIXES[phase].flatMap((p) => ANNOTATION_KEYS.map((k) => `${p}/${k}`)).filter((k) => annotations[k] !== undefined);
    return stray.length > 0 ? { error: `the pod has ${stray.join(', ')} but no ${stray[0]?.split('/')[0] ?? ''}/command` } : undefined;
  }
  const value = (k: (typeof ANNOTATION_KEYS)[number]): string | undefined => annotations[`${prefix}/${k}`];
  const command = parseHookCommand(value('command') ?? '');
  const errors: string[] = [];
  if ('error' in command) errors.push(`annotation ${prefix}/command ${command.error}`);
  else {
    const why = commandProblem(command);
    if (why !== undefined) errors.push(`annotation ${prefix}/command ${why}`);
  }
  const onError = onErrorOf(value('on-error'), `annotation ${prefix}/on-error`);
  if (typeof onError !== 'string') errors.push(onError.error);
  const timeout = timeoutOf(value('timeout'), `annotation ${prefix}/timeout`);
  if (typeof timeout !== 'number') errors.push(timeout.error);
  if (errors.length > 0 || 'error' in command || typeof onError !== 'string' || typeof timeout !== 'number') return { error: errors.join('; ') };
  const container = value('container');
  return { hooks: [{ phase, name: prefix, source: 'annotation', container: container === undefined || container === '' ? undefined : container, command, onError, timeoutMs: timeout }] };
}
