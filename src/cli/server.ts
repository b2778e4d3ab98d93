// `stowage server`: every setting is a flag (Velero's names) and an environment variable
// (STOWAGE_<FLAG>); flags win over the environment, which wins over the defaults.
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { CONFIG_FLAGS, ConfigError, DEFAULT_CONFIG, applyConfigOverrides, formatRestorePriorities, type ConfigKey } from '../config/index.js';
import { formatDuration } from '../util/duration.js';
import { runServer, type ControllerFactory } from '../main.js';
import { heapGrowth } from './heap.js';

function defaultText(key: ConfigKey): string {
  const v = DEFAULT_CONFIG[key];
  const flag = CONFIG_FLAGS.find((f) => f.key === key);
  if (flag?.kind === 'duration' && typeof v === 'number') return formatDuration(v);
  if (flag?.kind === 'priorities') return formatRestorePriorities(DEFAULT_CONFIG.restoreResourcePriorities);
  return String(v);
}

export function serverCommand(controllers: ControllerFactory[] = []): Command {
  const cmd = new Command('server').description('Run the Stowage server (controllers for backups, restores and locations)');
  for (const f of CONFIG_FLAGS) {
    const shown = defaultText(f.key);
    const opt = new Option(`--${f.flag} <value>`, `${f.description} [env ${f.env}]${shown !== '' ? ` (default: ${shown})` : ''}`);
    cmd.addOption(opt);
  }
  cmd.action(async (raw: Record<string, string | undefined>) => {
    // One pass over env then flags, so derived defaults (the spool under --scratch-dir) see both.
    const overrides: Partial<Record<ConfigKey, string>> = {};
    for (const f of CONFIG_FLAGS) {
      const env = process.env[f.env];
      if (env !== undefined && env !== '') overrides[f.key] = env;
      const camel = f.flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
      const v = raw[camel];
      if (v !== undefined) overrides[f.key] = v;
    }
    let config;
    try {
      config = applyConfigOverrides(DEFAULT_CONFIG, overrides, (f) => (raw[f.flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())] !== undefined ? `--${f.flag}` : f.env));
    } catch (err) {
      if (err instanceof ConfigError) {
        process.stderr.write(`stowage server: ${err.problems.join('\n  ')}\n`);
        process.exit(2);
      }
      throw err;
    }
    const heap = heapGrowth({ percent: config.heapGrowthPercent, backupPercent: config.backupHeapGrowthPercent });
    const bin = fileURLToPath(new URL('./bin.js', import.meta.url));
    const code = await runServer({
      config, selfCommand: [process.execPath, bin, 'run-plugins'], controllers, onRunsChanged: (runs) => heap.backupsRunning(runs.backups),
    });
    process.exit(code);
  });
  return cmd;
}
