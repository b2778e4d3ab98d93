// Running a restore's hooks (restore/podHooks.ts is the shape the engine sees). Each pod the restore
// creates gets one task: it waits, on a watch of that pod, for the init containers the hooks added
// to finish, then runs the exec hooks in order, each once its container runs (and is ready, with
// waitForReady), through `exec` (hooks/exec.ts: pods/exec as the run's client, so in trust mode
// requester as the requester). Tasks of different pods run at once; a pod's hooks never do.
// Every hook that applies counts as attempted, and as failed unless it ran and exited 0.
import type winston from 'winston';
import { CORE, isGone, isNotFound, type DynamicClient } from '../kube/index.js';
import { errorMessage } from '../util/errors.js';
import {
  compileRestoreHooks, describeHook, execContainer, hooksForPod, withInitContainers,
  type CompiledRestoreHooks, type ExecHook, type PodView,
} from './restoreSpec.js';
import type { RestoreHooks } from '../apis/v1/index.js';
import type { ExecOutcome } from './exec.js';

/** What an exec returns: exec.ts's outcome, less the HTTP status the hooks do not read. */
export type HookExecOutcome = Omit<ExecOutcome, 'httpStatus'>;
export type HookExec = (
  target: { namespace: string; pod: string; container: string; command: readonly string[] },
  opts: { timeoutMs: number; signal?: AbortSignal | undefined },
) => Promise<HookExecOutcome>;

type Pod = PodView & Record<string, unknown> & {
  status?: {
    phase?: string;
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
};
interface Terminated { exitCode?: number; reason?: string; message?: string }
interface ContainerStatus {
  name: string;
  ready?: boolean;
  state?: { running?: object; terminated?: Terminated; waiting?: { reason?: string; message?: string } };
  lastState?: { terminated?: Terminated };
}

export interface RestoreHookRunnerDeps {
  hooks: RestoreHooks | undefined;
  /** The run's client: pods are watched with it (in trust mode requester, as the requester). */
  client: DynamicClient;
  exec: HookExec;
  log: winston.Logger;
  /** The run's stop: every wait and exec ends with it. */
  signal: AbortSignal;
}

type Report = (kind: 'warnings' | 'errors', namespace: string, message: string) => void;

interface Planned {
  init: { hook: string; name: string; timeoutMs: number }[];
  exec: ExecHook[];
}

const keyOf = (p: PodView): string => `${p.metadata.namespace ?? ''}/${p.metadata.name ?? ''}`;
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`;
const quoteCommand = (c: readonly string[]): string => JSON.stringify(c);

/** The tail of a command's output for a message, both streams, never empty-handed. */
function outputOf(o: HookExecOutcome): string {
  const parts = [o.stdout.trim() !== '' ? `stdout: ${o.stdout.trim()}` : '', o.stderr.trim() !== '' ? `stderr: ${o.stderr.trim()}` : ''].filter((x) => x !== '');
  return parts.length === 0 ? 'no output' : parts.join('; ');
}

export function newRestoreHookRunner(deps: RestoreHookRunnerDeps): {
  prepare<T extends object>(pod: T, dryRun: boolean): { create: T; notes: string[]; warnings: string[] } | string;
  created(pod: object, report: Report): void;
  settle(): Promise<{ hooksAttempted: number; hooksFailed: number }>;
} {
  const compiled: CompiledRestoreHooks = compileRestoreHooks(deps.hooks);
  const planned = new Map<string, Planned>();
  const tasks: Promise<void>[] = [];
  const counts = { hooksAttempted: 0, hooksFailed: 0 };

  return {
    prepare(item, dryRun) {
      const pod = item as unknown as Pod;
      const found = hooksForPod(compiled, pod);
      if (found.problems.length > 0) return `not restored: its restore hook annotations are wrong: ${found.problems.join('; ')}`;
      const { pod: create, added, notAdded } = withInitContainers(pod, found.init);
      const would = dryRun ? 'would be ' : '';
      const notes = [
        ...added.map((a) => `init container ${a.name} (${a.image}) ${would}added by restore hook ${a.hook === '<from-annotations>' ? 'from the pod\'s annotations' : `"${a.hook}"`}`),
        ...found.exec.map((h) => `${describeHook('exec', h.hook, execContainer(h, pod), pod)}${dryRun ? ' would run' : ''}: ${quoteCommand(h.command)} (onError ${h.onError})`),
      ];
      if (dryRun) {
        for (const n of notes) deps.log.info(`dry run: pod ${keyOf(pod)}: ${n}; nothing runs`);
      } else if (added.length > 0 || found.exec.length > 0) {
        const timeouts = new Map(found.init.flatMap((h) => h.containers.map((c) => [String(c.name), h.timeoutMs] as const)));
        planned.set(keyOf(pod), { init: added.map((a) => ({ hook: a.hook, name: a.name, timeoutMs: timeouts.get(a.name) ?? 0 })), exec: found.exec });
      }
      // The same object with only spec.initContainers changed: still a T.
      return { create: create as typeof item, notes, warnings: notAdded };
    },

    created(item, report) {
      const pod = item as unknown as Pod;
      const plan = planned.get(keyOf(pod));
      if (plan === undefined) return;
      planned.delete(keyOf(pod));
      counts.hooksAttempted += plan.init.length + plan.exec.length;
      tasks.push(runPod(deps, pod, plan, report, () => void counts.hooksFailed++));
    },

    async settle() {
      // A task never rejects (each failure is reported and counted), but a bug must not hang the run.
      await Promise.allSettled(tasks);
      return { ...counts };
    },
  };
}

/**
 * One pod's hooks, in order: its added init containers awaited, then its exec hooks. A failed init
 * container means the pod's containers will not run: its exec hooks are reported not run at once
 * (rather than each waiting out its waitTimeout), as are the ones after an onError Fail.
 */
async function runPod(deps: RestoreHookRunnerDeps, pod: Pod, plan: Planned, report: Report, failed: () => void): Promise<void> {
  const ns = pod.metadata.namespace ?? '';
  const t0 = Date.now();
  let settled = 0;
  const fail = (kind: 'warnings' | 'errors', message: string): void => {
    settled++;
    failed();
    deps.log.error(message);
    report(kind, ns, message);
  };
  let stopped: string | undefined;
  try {
    for (const init of plan.init) {
      const what = describeHook('init', init.hook, init.name, pod);
      const outcome = await waitForPod(deps, pod, init.timeoutMs - (Date.now() - t0), (p) => initState(p, init.name));
      const took = seconds(Date.now() - t0);
      let problem: string | undefined;
      if (outcome === 'timeout') problem = `not finished ${seconds(init.timeoutMs)} after the pod was created (timeout)`;
      else if (typeof outcome === 'string') problem = outcome;
      else if (outcome.exitCode !== 0) problem = `exited ${outcome.exitCode ?? '?'}${outcome.reason !== undefined ? ` (${outcome.reason})` : ''} ${took} after the pod was created${(outcome.message ?? '').trim() !== '' ? `: ${outcome.message?.trim() ?? ''}` : ''}`;
      if (problem === undefined) {
        settled++;
        deps.log.info(`${what}: exited 0 (ok) ${took} after the pod was created`);
        continue;
      }
      fail('errors', `${what} failed: ${problem}`);
      stopped ??= `${what} failed, so the pod's containers do not start`;
    }
    for (const h of plan.exec) {
      const container = execContainer(h, pod) ?? '<none>';
      const what = describeHook('exec', h.hook, container, pod);
      const kind = h.onError === 'Fail' ? 'errors' : 'warnings';
      if (stopped !== undefined) {
        fail(kind, `${what} not run: ${stopped}`);
        continue;
      }
      const problem = await runExec(deps, pod, h, container, t0);
      if (problem === undefined) {
        settled++;
        continue;
      }
      fail(kind, `${what} failed: ${problem}`);
      if (h.onError === 'Fail') stopped = `the pod's hook before it failed with onError Fail (${what})`;
    }
  } catch (err) {
    // Waiting itself failed (the pod deleted, the watch refused, the restore stopped): every hook not settled yet fails with it.
    const left = plan.init.length + plan.exec.length - settled;
    fail('errors', `restore hooks of pod ${keyOf(pod)} stopped${left > 1 ? ` (${left} hooks not run)` : ''}: ${errorMessage(err)}`);
    for (let i = 1; i < left; i++) failed();
  }
}

/** Runs one exec hook once its container is up; undefined when it exited 0, else why it failed. */
async function runExec(deps: RestoreHookRunnerDeps, pod: Pod, h: ExecHook, container: string, t0: number): Promise<string | undefined> {
  const ns = pod.metadata.namespace ?? '';
  const name = pod.metadata.name ?? '';
  if (!(pod.spec?.containers ?? []).some((c) => c.name === container)) {
    return `pod ${ns}/${name} has no container ${container} (it has ${(pod.spec?.containers ?? []).map((c) => c.name).join(', ')})`;
  }
  const up = await waitForPod(deps, pod, h.waitTimeoutMs - (Date.now() - t0), (p) => containerUp(p, container, h.waitForReady));
  if (up === 'timeout') return `container ${container} was not ${h.waitForReady ? 'ready' : 'running'} ${seconds(h.waitTimeoutMs)} after the pod was created (waitTimeout)`;
  if (typeof up === 'string') return up;
  const waited = Date.now() - t0;
  const o = await deps.exec({ namespace: ns, pod: name, container, command: h.command }, { timeoutMs: h.execTimeoutMs, signal: deps.signal });
  const what = describeHook('exec', h.hook, container, pod);
  if (o.timedOut) return `${quoteCommand(h.command)} ran past its execTimeout of ${seconds(h.execTimeoutMs)} and was ended; ${outputOf(o)}`;
  if (o.error !== undefined) return o.error;
  const ran = `in ${seconds(o.durationMs)}, after waiting ${seconds(waited)} for the container`;
  if (o.exitCode !== 0) return `${quoteCommand(h.command)} exited ${o.exitCode ?? '?'} ${ran}; ${outputOf(o)}`;
  deps.log.info(`${what}: ${quoteCommand(h.command)} exited 0 (ok) ${ran}; ${outputOf(o)}`);
  return undefined;
}

/** An added init container's end: its exit (the first non-zero one counts, the kubelet restarts it), or undefined while it runs. */
function initState(p: Pod, name: string): Terminated | string | undefined {
  const st = p.status?.initContainerStatuses?.find((c) => c.name === name);
  if (st === undefined) return podEnded(p);
  const t = st.state?.terminated;
  if (t !== undefined) return t;
  const last = st.lastState?.terminated;
  if (last !== undefined && last.exitCode !== 0) return last;
  const waiting = st.state?.waiting;
  if (waiting?.reason !== undefined && /ErrImage|ImagePull|InvalidImageName|CreateContainerConfigError|CreateContainerError/.test(waiting.reason)) {
    return `init container ${name} cannot start: ${waiting.reason}${waiting.message !== undefined ? `: ${waiting.message}` : ''}`;
  }
  return podEnded(p);
}

/** True once the container runs (is ready, when asked), a message when it never will, else undefined. */
function containerUp(p: Pod, container: string, ready: boolean): true | string | undefined {
  const ended = podEnded(p);
  if (ended !== undefined) return ended;
  const st = p.status?.containerStatuses?.find((c) => c.name === container);
  if (st?.state?.running !== undefined && (!ready || st.ready === true)) return true;
  return undefined;
}

function podEnded(p: Pod): string | undefined {
  const phase = p.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed' ? `pod ${keyOf(p)} ended (phase ${phase}) before its hooks ran` : undefined;
}

/**
 * Watches the pod until `check` says something other than undefined; 'timeout' after `ms`. A watch
 * the server closes is opened again from the last version seen; one too old (410) reads the pod again.
 */
async function waitForPod<T>(deps: RestoreHookRunnerDeps, pod: Pod, ms: number, check: (p: Pod) => T | undefined): Promise<T | 'timeout'> {
  if (ms <= 0) return 'timeout';
  const ns = pod.metadata.namespace ?? '';
  const name = pod.metadata.name ?? '';
  const timer = AbortSignal.timeout(ms);
  const signal = AbortSignal.any([deps.signal, timer]);
  const ended = (): 'timeout' => {
    if (deps.signal.aborted) throw new Error(`the restore stopped while waiting for pod ${ns}/${name}: ${errorMessage(deps.signal.reason)}`);
    return 'timeout';
  };
  let version: string | undefined;
  const read = async (): Promise<T | undefined> => {
    let now: Pod;
    try {
      now = await deps.client.get<Pod>(CORE.pods, ns, name, { signal });
    } catch (err) {
      if (signal.aborted) return undefined;
      if (isNotFound(err)) throw new Error(`pod ${ns}/${name} was deleted before its hooks ran`);
      throw new Error(`cannot read pod ${ns}/${name} to wait for it: ${errorMessage(err)}`);
    }
    version = (now.metadata as { resourceVersion?: string }).resourceVersion;
    return check(now);
  };
  const first = await read();
  if (first !== undefined) return first;
  while (!signal.aborted) {
    try {
      for await (const ev of deps.client.watch<Pod>(CORE.pods, { namespace: ns, fieldSelector: `metadata.name=${name}`, resourceVersion: version, signal })) {
        if (ev.type === 'BOOKMARK') continue;
        if (ev.type === 'DELETED') throw new Error(`pod ${ns}/${name} was deleted before its hooks ran`);
        version = (ev.object.metadata as { resourceVersion?: string }).resourceVersion ?? version;
        const v = check(ev.object);
        if (v !== undefined) return v;
      }
    } catch (err) {
      if (signal.aborted) break;
      if (err instanceof Error && err.message.includes('was deleted before')) throw err;
      if (!isGone(err)) throw new Error(`cannot watch pod ${ns}/${name}: ${errorMessage(err)}`);
      const again = await read();
      if (again !== undefined) return again;
    }
  }
  return ended();
}
