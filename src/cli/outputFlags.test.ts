import fs from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from './program.js';

/** Every command path with an output format option (`--output <format>`): the default and the help text. */
function outputOptions(cmd: Command, prefix: string[] = []): Map<string, { default: unknown; help: string }> {
  const out = new Map<string, { default: unknown; help: string }>();
  for (const sub of cmd.commands) {
    const p = [...prefix, sub.name()];
    // `backup download -o <file>` and `debug --output <file>` name where to write, not a format.
    const o = sub.options.find((x) => x.long === '--output' && x.flags.endsWith('<format>'));
    if (o !== undefined) out.set(p.join(' '), { default: o.defaultValue, help: o.description });
    for (const [k, v] of outputOptions(sub, p)) out.set(k, v);
  }
  return out;
}

describe('-o on the read commands (README "Every read command takes")', () => {
  const all = outputOptions(buildProgram());
  const logs = [...all.keys()].filter((k) => k.endsWith(' logs'));

  it('the logs commands take text|json, every other -o takes table|json|yaml', () => {
    expect(logs.sort()).toEqual(['backup logs', 'restore logs']);
    for (const k of logs) expect(all.get(k), k).toEqual({ default: 'text', help: 'text, or json for the log lines as stored' });
    const others = [...all.entries()].filter(([k]) => !logs.includes(k));
    expect(others.map(([k]) => k)).toEqual([
      'backup get', 'backup describe', 'backup verify', 'backup-location get', 'backup-location describe',
      'restore get', 'restore describe', 'schedule get', 'schedule describe', 'version',
    ]);
    for (const [k, v] of others) expect(v, k).toEqual({ default: 'table', help: 'output format: table, json or yaml' });
  });

  it('the README says so', () => {
    const readme = fs.readFileSync(path.resolve(import.meta.dirname, '../../README.md'), 'utf8');
    expect(readme).toContain('Every read command takes `-o table|json|yaml`, except `backup logs` and `restore logs`, which take\n`-o text|json`');
  });
});
