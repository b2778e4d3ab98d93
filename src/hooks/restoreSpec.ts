// Restore hooks as Velero defines them, read from two places: a Restore's spec.hooks and a pod's
// own init.hook.restore.velero.io/* and post.hook.restore.velero.io/* annotations (which win, as in
// Velero). Pure: validation of the spec with field paths, and which hooks apply to a pod as it is
// about to be created (its target namespace after namespaceMapping, its labels as restored: the
// namespace Velero matches, see its issue 4720).
import type { ExecRestoreHook, RestoreHooks, RestoreResourceHookSpec } from '../apis/v1/index.js';
import { namespaceEntryProblem, namespaceFilter, resourceFilter, type NamespaceFilter, type ResourceFilter } from '../selection/filters.js';
import { parseHookCommand } from '../selection/hooks.js';
import { labelSelectorMatches, validateLabelSelector } from '../selection/labels.js';
import { tryParseDuration } from '../util/duration.js';

/** Velero's defaults: 30 s per command. Velero waits forever for a container; a Stowage run never hangs, so 10 minutes. */
export const DEFAULT_EXEC_TIMEOUT_MS = 30_000;
export const DEFAULT_WAIT_TIMEOUT_MS = 10 * 60_000;

export const INIT_ANNOTATIONS = {
  image: 'init.hook.restore.velero.io/container-image',
  name: 'init.hook.restore.velero.io/container-name',
  command: 'init.hook.restore.velero.io/command',
  timeout: 'init.hook.restore.velero.io/timeout',
} as const;
export const EXEC_ANNOTATIONS = {
  container: 'post.hook.restore.velero.io/container',
  command: 'post.hook.restore.velero.io/command',
  onError: 'post.hook.restore.velero.io/on-error',
  execTimeout: 'post.hook.restore.velero.io/exec-timeout',
  waitTimeout: 'post.hook.restore.velero.io/wait-timeout',
  waitForReady: 'post.hook.restore.velero.io/wait-for-ready',
} as const;
/** The init container's name when the annotation names none (Velero makes up a random one). */
export const DEFAULT_INIT_CONTAINER_NAME = 'stowage-restore-init';
/** What names a hook that comes from a pod's annotations in the log and in messages. */
export const FROM_ANNOTATIONS = '<from-annotations>';

export interface InitHook {
  /** The hook's name (spec.hooks.resources[].name) or FROM_ANNOTATIONS. */
  hook: string;
  /** The init containers to add, in order. */
  containers: Record<string, unknown>[];
  timeoutMs: number;
}

export interface ExecHook {
  hook: string;
  /** undefined: the pod's first container. */
  container: string | undefined;
  command: string[];
  onError: 'Continue' | 'Fail';
  execTimeoutMs: number;
  waitTimeoutMs: number;
  waitForReady: boolean;
}

/** A pod as the hooks see it: where it is created, with what labels, annotations and containers. */
export interface PodView {
  metadata: { namespace?: string; name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { containers?: { name?: string }[]; initContainers?: { name?: string }[] };
}

interface CompiledEntry {
  spec: RestoreResourceHookSpec;
  namespaces: NamespaceFilter;
  resources: ResourceFilter;
}

export interface CompiledRestoreHooks {
  readonly entries: readonly CompiledEntry[];
}

/** Pods, by every name a resource filter entry may give them. */
const PODS = { resource: 'pods', group: '', kind: 'Pod', singularName: 'pod', shortNames: ['po'], namespaced: true } as const;

const DNS_LABEL_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function durationProblem(value: string | undefined, at: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  const d = tryParseDuration(value, at);
  if ('error' in d) return d.error;
  return d.ms <= 0 ? `${at} must be a positive duration, not "${value}"` : undefined;
}

const durationOr = (value: string | undefined, fallback: number): number => {
  if (value === undefined || value === '') return fallback;
  const d = tryParseDuration(value);
  return 'ms' in d ? d.ms : fallback;
};

const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === 'string');

/** What is wrong with one init container of the spec, each under its path. */
function initContainerErrors(c: unknown, at: string): string[] {
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return [`${at}: must be a Container object`];
  const o = c as Record<string, unknown>;
  const errors: string[] = [];
  if (typeof o.name !== 'string' || o.name === '') errors.push(`${at}.name is required`);
  else if (o.name.length > 63 || !DNS_LABEL_RE.test(o.name)) errors.push(`${at}.name "${o.name}" is not a valid container name (a DNS label: lowercase letters, digits and "-", at most 63)`);
  if (typeof o.image !== 'string' || o.image.trim() === '') errors.push(`${at}.image is required`);
  for (const k of ['command', 'args'] as const) if (o[k] !== undefined && !isStringList(o[k])) errors.push(`${at}.${k} must be a list of strings`);
  return errors;
}

function execErrors(e: ExecRestoreHook, at: string): string[] {
  const errors: string[] = [];
  if (!isStringList(e.command) || e.command.length === 0 || e.command[0] === '') errors.push(`${at}.command is required: the command and its arguments, e.g. ["/bin/sh", "-c", "..."]`);
  if (e.container !== undefined && e.container !== '' && !DNS_LABEL_RE.test(e.container)) errors.push(`${at}.container "${e.container}" is not a valid container name`);
  if (e.onError !== undefined && e.onError !== 'Continue' && e.onError !== 'Fail') errors.push(`${at}.onError must be Continue or Fail, not "${String(e.onError)}"`);
  for (const k of ['execTimeout', 'waitTimeout'] as const) {
    const p = durationProblem(e[k], `${at}.${k}`);
    if (p !== undefined) errors.push(p);
  }
  return errors;
}

/** Every problem of spec.hooks, each naming its field path. Empty for a usable spec. */
export function restoreHookErrors(hooks: RestoreHooks | undefined | null): string[] {
  const errors: string[] = [];
  const names = new Map<string, number>();
  (hooks?.resources ?? []).forEach((r, i) => {
    const at = `spec.hooks.resources[${i}]`;
    if (typeof r.name !== 'string' || r.name.trim() === '') errors.push(`${at}.name is required`);
    else if (names.has(r.name)) errors.push(`${at}.name "${r.name}" is also the name of spec.hooks.resources[${names.get(r.name)}]; hook names must be unique`);
    else names.set(r.name, i);
    for (const k of ['includedNamespaces', 'excludedNamespaces'] as const) {
      (r[k] ?? []).forEach((ns, j) => {
        const p = ns === '*' ? undefined : namespaceEntryProblem(ns);
        if (p !== undefined) errors.push(`${at}.${k}[${j}] "${ns}" ${p}`);
      });
    }
    if (!resourceFilter(r.includedResources, r.excludedResources).shouldInclude(PODS)) {
      errors.push(`${at}: restore hooks apply to pods only, and includedResources/excludedResources leave pods out, so the hook would apply to nothing; include pods (or leave both empty)`);
    }
    errors.push(...validateLabelSelector(r.labelSelector, `${at}.labelSelector`));
    const post = r.postHooks ?? [];
    if (post.length === 0) errors.push(`${at}.postHooks is empty: give an init or exec hook, or remove the entry`);
    post.forEach((h, j) => {
      const hat = `${at}.postHooks[${j}]`;
      if (h.exec === undefined && h.init === undefined) errors.push(`${hat}: set exec or init`);
      if (h.exec !== undefined && h.init !== undefined) errors.push(`${hat}: set exec or init, not both (give each its own entry)`);
      if (h.exec !== undefined) errors.push(...execErrors(h.exec, `${hat}.exec`));
      if (h.init !== undefined) {
        const list = h.init.initContainers ?? [];
        if (list.length === 0) errors.push(`${hat}.init.initContainers is empty: give at least one container`);
        list.forEach((c, k) => errors.push(...initContainerErrors(c, `${hat}.init.initContainers[${k}]`)));
        const seen = new Set<string>();
        for (const c of list) {
          const n = (c as { name?: unknown }).name;
          if (typeof n !== 'string') continue;
          if (seen.has(n)) errors.push(`${hat}.init.initContainers: two containers are named "${n}"`);
          seen.add(n);
        }
        const p = durationProblem(h.init.timeout, `${hat}.init.timeout`);
        if (p !== undefined) errors.push(p);
      }
    });
  });
  return errors;
}

/** The spec's hooks ready to match pods (the spec must have passed restoreHookErrors). */
export function compileRestoreHooks(hooks: RestoreHooks | undefined | null): CompiledRestoreHooks {
  return {
    entries: (hooks?.resources ?? []).map((spec) => ({
      spec,
      namespaces: namespaceFilter(spec.includedNamespaces, spec.excludedNamespaces),
      resources: resourceFilter(spec.includedResources, spec.excludedResources),
    })),
  };
}

export const hasRestoreHooks = (c: CompiledRestoreHooks): boolean => c.entries.length > 0;

function applies(e: CompiledEntry, pod: PodView): boolean {
  return e.resources.shouldInclude(PODS) && e.namespaces.shouldInclude(pod.metadata.namespace ?? '') && labelSelectorMatches(e.spec.labelSelector, pod.metadata.labels);
}

/** A command annotation: a JSON list of strings, or else one word (Velero's rule, parsed as the backup hooks parse it). */
function annotationCommand(value: string, key: string): string[] | string {
  const c = parseHookCommand(value);
  if ('error' in c) return `annotation ${key} ${c.error}`;
  return c.length > 0 ? c : `annotation ${key} is an empty list: give the executable and its arguments`;
}

const GO_BOOLS: Record<string, boolean> = { 1: true, t: true, T: true, TRUE: true, true: true, True: true, 0: false, f: false, F: false, FALSE: false, false: false, False: false };

/** The pod's init hook from its annotations: undefined when it has none, a message when they are wrong. */
function initFromAnnotations(a: Record<string, string>): InitHook | string | undefined {
  const image = a[INIT_ANNOTATIONS.image] ?? '';
  if (image === '') {
    const stray = [INIT_ANNOTATIONS.name, INIT_ANNOTATIONS.command, INIT_ANNOTATIONS.timeout].filter((k) => (a[k] ?? '') !== '');
    return stray.length === 0 ? undefined : `annotation ${stray.join(', ')} set without ${INIT_ANNOTATIONS.image}, so there is no init container to add`;
  }
  const name = a[INIT_ANNOTATIONS.name] ?? DEFAULT_INIT_CONTAINER_NAME;
  if (!DNS_LABEL_RE.test(name) || name.length > 63) return `annotation ${INIT_ANNOTATIONS.name} "${name}" is not a valid container name`;
  const container: Record<string, unknown> = { name, image };
  const cmd = a[INIT_ANNOTATIONS.command] ?? '';
  if (cmd !== '') {
    const c = annotationCommand(cmd, INIT_ANNOTATIONS.command);
    if (typeof c === 'string') return c;
    container.command = c;
  }
  const tp = durationProblem(a[INIT_ANNOTATIONS.timeout], `annotation ${INIT_ANNOTATIONS.timeout}`);
  if (tp !== undefined) return tp;
  return { hook: FROM_ANNOTATIONS, containers: [container], timeoutMs: durationOr(a[INIT_ANNOTATIONS.timeout], DEFAULT_WAIT_TIMEOUT_MS) };
}

/** The pod's exec hook from its annotations: undefined when it has none, a message when they are wrong. */
function execFromAnnotations(a: Record<string, string>): ExecHook | string | undefined {
  const cmd = a[EXEC_ANNOTATIONS.command] ?? '';
  if (cmd === '') {
    const stray = [EXEC_ANNOTATIONS.container, EXEC_ANNOTATIONS.onError, EXEC_ANNOTATIONS.execTimeout, EXEC_ANNOTATIONS.waitTimeout, EXEC_ANNOTATIONS.waitForReady].filter((k) => (a[k] ?? '') !== '');
    return stray.length === 0 ? undefined : `annotation ${stray.join(', ')} set without ${EXEC_ANNOTATIONS.command}, so there is no command to run`;
  }
  const command = annotationCommand(cmd, EXEC_ANNOTATIONS.command);
  if (typeof command === 'string') return command;
  const onError = a[EXEC_ANNOTATIONS.onError] ?? '';
  if (onError !== '' && onError !== 'Continue' && onError !== 'Fail') return `annotation ${EXEC_ANNOTATIONS.onError} must be Continue or Fail, not "${onError}"`;
  for (const k of [EXEC_ANNOTATIONS.execTimeout, EXEC_ANNOTATIONS.waitTimeout]) {
    const p = durationProblem(a[k], `annotation ${k}`);
    if (p !== undefined) return p;
  }
  const ready = a[EXEC_ANNOTATIONS.waitForReady] ?? '';
  if (ready !== '' && GO_BOOLS[ready] === undefined) return `annotation ${EXEC_ANNOTATIONS.waitForReady} must be true or false, not "${ready}"`;
  const container = a[EXEC_ANNOTATIONS.container] ?? '';
  return {
    hook: FROM_ANNOTATIONS,
    container: container === '' ? undefined : container,
    command,
    onError: onError === 'Fail' ? 'Fail' : 'Continue',
    execTimeoutMs: durationOr(a[EXEC_ANNOTATIONS.execTimeout], DEFAULT_EXEC_TIMEOUT_MS),
    waitTimeoutMs: durationOr(a[EXEC_ANNOTATIONS.waitTimeout], DEFAULT_WAIT_TIMEOUT_MS),
    waitForReady: GO_BOOLS[ready] ?? false,
  };
}

/** The hooks for a pod about to be created: its annotations' when it has them, else the spec's that apply to it, in order. */
export interface PodHooks {
  init: InitHook[];
  exec: ExecHook[];
  /** Annotations that are set but wrong: the pod is not restored (its setup would silently go missing). */
  problems: string[];
}

export function hooksForPod(compiled: CompiledRestoreHooks, pod: PodView): PodHooks {
  const a = pod.metadata.annotations ?? {};
  const out: PodHooks = { init: [], exec: [], problems: [] };
  const initA = initFromAnnotations(a);
  const execA = execFromAnnotations(a);
  if (typeof initA === 'string') out.problems.push(initA);
  if (typeof execA === 'string') out.problems.push(execA);
  const matching = compiled.entries.filter((e) => applies(e, pod));
  if (initA !== undefined) {
    if (typeof initA !== 'string') out.init.push(initA);
  } else {
    for (const e of matching) {
      for (const h of e.spec.postHooks ?? []) {
        if (h.init === undefined) continue;
        out.init.push({ hook: e.spec.name, containers: (h.init.initContainers ?? []).map((c) => ({ ...c })), timeoutMs: durationOr(h.init.timeout, DEFAULT_WAIT_TIMEOUT_MS) });
      }
    }
  }
  if (execA !== undefined) {
    if (typeof execA !== 'string') out.exec.push(execA);
  } else {
    for (const e of matching) {
      for (const h of e.spec.postHooks ?? []) {
        const x = h.exec;
        if (x === undefined) continue;
        out.exec.push({
          hook: e.spec.name,
          container: x.container === undefined || x.container === '' ? undefined : x.container,
          command: [...x.command],
          onError: x.onError === 'Fail' ? 'Fail' : 'Continue',
          execTimeoutMs: durationOr(x.execTimeout, DEFAULT_EXEC_TIMEOUT_MS),
          waitTimeoutMs: durationOr(x.waitTimeout, DEFAULT_WAIT_TIMEOUT_MS),
          waitForReady: x.waitForReady === true,
        });
      }
    }
  }
  return out;
}

/**
 * The pod with the init hooks' containers put before its own init containers (Velero's order), and
 * what was added. A container whose name the pod already uses is not added, and says so: a pod
 * backed up after an earlier restore with the same hook carries it already.
 */
export function withInitContainers(pod: PodView & Record<string, unknown>, hooks: readonly InitHook[]): { pod: Record<string, unknown>; added: { hook: string; name: string; image: string }[]; notAdded: string[] } {
  const spec = (pod.spec ?? {}) as { containers?: { name?: string }[]; initContainers?: Record<string, unknown>[] };
  const taken = new Set([...(spec.containers ?? []), ...(spec.initContainers ?? [])].map((c) => c.name));
  const added: { hook: string; name: string; image: string }[] = [];
  const notAdded: string[] = [];
  const injected: Record<string, unknown>[] = [];
  for (const h of hooks) {
    for (const c of h.containers) {
      const name = String(c.name);
      if (taken.has(name)) {
        notAdded.push(`init container ${name} of restore hook ${h.hook} not added: the pod already has a container named ${name}`);
        continue;
      }
      taken.add(name);
      injected.push({ ...c });
      added.push({ hook: h.hook, name, image: String(c.image) });
    }
  }
  if (injected.length === 0) return { pod, added, notAdded };
  return { pod: { ...pod, spec: { ...spec, initContainers: [...injected, ...(spec.initContainers ?? [])] } }, added, notAdded };
}

/** The container an exec hook runs in: its own, or the pod's first. */
export function execContainer(h: ExecHook, pod: PodView): string | undefined {
  return h.container ?? pod.spec?.containers?.[0]?.name;
}

/** A hook in words for the log and messages: `exec hook "h" in container app of pod ns/p`. */
export function describeHook(kind: 'exec' | 'init', hook: string, container: string | undefined, pod: PodView): string {
  const named = hook === FROM_ANNOTATIONS ? 'from the pod\'s annotations' : `"${hook}"`;
  const where = `${kind === 'init' ? 'init container' : 'container'} ${container ?? '<none>'} of pod ${pod.metadata.namespace ?? ''}/${pod.metadata.name ?? ''}`;
  return `${kind} hook ${named} in ${where}`;
}

export type { RestoreResourceHookSpec };
