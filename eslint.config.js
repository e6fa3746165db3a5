// Lint rules also enforce the direction of dependencies between folders:
// everything points toward config/, and mappers/ depends on config/ only.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const forbid = (...folders) => ({
  'no-restricted-imports': ['error', {
    patterns: folders.map((f) => ({
      group: [`**/${f}/**`, `../${f}`, `../../${f}`],
      message: `this folder must not import ${f}/ (see README: layout and direction of dependencies)`,
    })),
  }],
});

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'apps/**', 'test/fixtures/**', 'bench/results/**', '.jupiter/**', 'runs/**', 'orchestrator/dashboard/static/vendor/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { ...globals.node } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  { files: ['config/**/*.ts'], rules: forbid('mappers', 'profilers', 'circe', 'orchestrator') },
  { files: ['mappers/**/*.ts'], rules: forbid('profilers', 'circe', 'orchestrator') },
  { files: ['profilers/**/*.ts'], rules: forbid('orchestrator') },
  { files: ['circe/**/*.ts'], rules: forbid('mappers', 'profilers', 'orchestrator') },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' }, rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['orchestrator/dashboard/static/**/*.js'], languageOptions: { globals: { ...globals.browser } } },
);
