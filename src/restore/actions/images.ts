// Image mapping on every pod spec (Pods, workload templates, a CronJob's job template), containers
// and init containers alike. Stowage's rules map a registry or repository prefix: "old,new" turns
// old/rest into new/rest, and applies where old ends at a boundary (/, : or @) of the image name,
// the longest matching prefix winning; a Docker Hub short name (nginx:1) also matches by its full
// name (docker.io/library/nginx:1). Velero's rules (a velero.io/change-image-name ConfigMap) keep
// Velero's meaning: every occurrence of old anywhere in the name is replaced, the first rule (by
// data key) that occurs winning.
import type { KubeObject } from '../../plugin/api/index.js';
import { podSpecOf } from '../../kube/references.js';
import { arrayAt, isRecord } from '../objects.js';

export interface ImageRule {
  /** The ConfigMap data key, for messages. */
  key: string;
  from: string;
  to: string;
}

export type ImageMode = 'prefix' | 'substring';

/** Docker Hub's full name for a short reference: nginx -> docker.io/library/nginx, a/b -> docker.io/a/b. */
export function fullImageName(image: string): string {
  const first = image.split('/')[0] ?? '';
  const hasRegistry = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (hasRegistry) return image;
  return image.includes('/') ? `docker.io/${image}` : `docker.io/library/${image}`;
}

function prefixMatch(image: string, from: string): boolean {
  if (!image.startsWith(from)) return false;
  const next = image[from.length];
  return next === undefined || next === '/' || next === ':' || next === '@' || from.endsWith('/');
}

/** The image `image` becomes under the rules, and the rule used; undefined when none applies. */
export function mapImage(image: string, rules: readonly ImageRule[], mode: ImageMode): { image: string; rule: ImageRule } | undefined {
  if (mode === 'substring') {
    const rule = rules.find((r) => r.from !== '' && image.includes(r.from));
    return rule === undefined ? undefined : { image: image.split(rule.from).join(rule.to), rule };
  }
  for (const candidate of image === fullImageName(image) ? [image] : [image, fullImageName(image)]) {
    let best: ImageRule | undefined;
    for (const r of rules) if (prefixMatch(candidate, r.from) && (best === undefined || r.from.length > best.from.length)) best = r;
    if (best !== undefined) return { image: best.to + candidate.slice(best.from.length), rule: best };
  }
  return undefined;
}

/** Maps the images of the item's pod spec in place; returns what changed. */
export function mapImages(item: KubeObject, rules: readonly ImageRule[], mode: ImageMode): string[] {
  const spec = podSpecOf(item);
  if (!isRecord(spec)) return [];
  const notes: string[] = [];
  for (const list of ['initContainers', 'containers']) {
    for (const c of arrayAt(spec, list) ?? []) {
      if (!isRecord(c) || typeof c.image !== 'string') continue;
      const m = mapImage(c.image, rules, mode);
      if (m === undefined || m.image === c.image) continue;
      notes.push(`${list === 'containers' ? 'container' : 'init container'} ${String(c.name)}: image ${c.image} -> ${m.image}`);
      c.image = m.image;
    }
  }
  return notes;
}
