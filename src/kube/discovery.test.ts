import { describe, expect, it } from 'vitest';
import { mergeDiscovery, type DiscoveredEntry } from './discovery.js';

const entry = (name: string, kind: string, verbs = ['list', 'get', 'create']): DiscoveredEntry => ({ name, kind, namespaced: true, verbs });

describe('mergeDiscovery', () => {
  it('lists each group-resource once: at the preferred version when it serves it, else at the best version that does', () => {
    const out = mergeDiscovery([
      {
        group: 'batch',
        preferred: 'v1',
        lists: [
          { version: 'v1', resources: [entry('jobs', 'Job'), entry('jobs/status', 'Job')] },
          { version: 'v1beta1', resources: [entry('cronjobs', 'CronJob'), entry('cronjobs/status', 'CronJob')] },
          { version: 'v2alpha1', resources: [entry('cronjobs', 'CronJob')] },
        ],
      },
    ]);
    expect(out.map((r) => [r.groupResource, r.apiVersion, r.versions])).toEqual([
      ['jobs.batch', 'batch/v1', ['v1']],
      ['cronjobs.batch', 'batch/v1beta1', ['v1beta1', 'v2alpha1']],
    ]);
  });

  it("keeps the preferred version even when a higher-priority one serves the resource, and takes that version's entry", () => {
    const out = mergeDiscovery([
      {
        group: 'example.com',
        preferred: 'v1beta1',
        lists: [
          { version: 'v1', resources: [entry('widgets', 'Widget', ['list'])] },
          { version: 'v1beta1', resources: [entry('widgets', 'Widget', ['list', 'get', 'create'])] },
        ],
      },
    ]);
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ version: 'v1beta1', apiVersion: 'example.com/v1beta1', verbs: ['list', 'get', 'create'], versions: ['v1', 'v1beta1'] });
  });

  it('goes on with what answered when a version is missing (its list failed)', () => {
    const out = mergeDiscovery([{ group: 'g.io', preferred: 'v1', lists: [{ version: 'v1alpha1', resources: [entry('things', 'Thing')] }] }]);
    expect(out.map((r) => r.apiVersion)).toEqual(['g.io/v1alpha1']);
  });
});
