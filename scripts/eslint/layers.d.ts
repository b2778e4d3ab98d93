import type { Rule } from 'eslint';

export const ALLOWED: Record<string, string[]>;
export function layerOf(file: string, srcDir: string): string | null;
export const layersRule: Rule.RuleModule;
