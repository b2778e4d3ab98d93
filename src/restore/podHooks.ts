// What the restore engine asks of restore hooks (spec.hooks and the pods' hook annotations),
// implemented in src/hooks/ and handed in by the controller: the engine knows only this shape.
import type { KubeObject as LiveObject } from '../kube/index.js';
import type { KubeObject } from '../plugin/api/index.js';

export interface PreparedPod {
  /** The pod to create: with the init hooks' containers before its own. */
  create: KubeObject;
  /** What the hooks do to this pod, in words, for its outcome (a dry run's: what they would do). */
  notes: string[];
  /** Said in the results as warnings (an init container not added because its name is taken). */
  warnings: string[];
}

/** Where a hook's failure or warning goes: the results of the pod's namespace, and the log. */
export type HookReport = (kind: 'warnings' | 'errors', namespace: string, message: string) => void;

export interface RestorePodHooks {
  /** Before a pod is created or predicted. A string: why the pod is not restored (its hook annotations are wrong). */
  prepare(pod: KubeObject, dryRun: boolean): PreparedPod | string;
  /** A pod this restore created: its hooks start now (injected init containers awaited, then exec hooks run in order). */
  created(pod: LiveObject, report: HookReport): void;
  /** After the last tier: resolves when every hook started has finished, with the counts. */
  settle(): Promise<{ hooksAttempted: number; hooksFailed: number }>;
}
