import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { layersRule } from './scripts/eslint/layers.js';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.scratch/**', 'src/gen/**', 'examples/**/node_modules/**', 'examples/**/dist/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', setImmediate: 'readonly' },
    },
    plugins: { stowage: { rules: { layers: layersRule } } },
    rules: {
      'stowage/layers': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    rules: { '@typescript-eslint/consistent-type-imports': 'off' },
  },
);
