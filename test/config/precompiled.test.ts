// Precompiled validators (config/schemas/precompiled.ts): current with the schemas, used for them,
// validating exactly like ajv compiling the schema, and keeping the ajv compiler out of a
// process that only loads apps (the task runner's start-up).
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { Ajv, type AnySchemaObject, type ValidateFunction } from 'ajv';
import { AJV_OPTIONS, lazyValidator, precompiledValidator } from '../../config/schemas/ajv.js';
import { PRECOMPILED_SCHEMAS, precompiledPath, precompiledSource } from '../../config/schemas/generate.js';
import { appConfigJsonSchema } from '../../config/schemas/app-config-json.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..', '..');

/** What a validator says about a value: valid, or its errors as checkSchema reads them. */
function verdict(validate: ValidateFunction, value: unknown): unknown {
  const ok = validate(value);
  return ok ? true : (validate.errors ?? []).map((e) => ({ path: e.instancePath, keyword: e.keyword, params: e.params, message: e.message, schemaPath: e.schemaPath }));
}

const samples: unknown[] = [
  null, 1, 'x', [], {},
  { taskname_map: { a: ['a', true] } },
  { taskname_map: { a: ['a', 'yes'] } },
  { taskname_map: { a: ['a'] } },
  { taskname_map: { a: ['', true] } },
  { taskname_map: { a: ['a', false, 'x', 2, true, null] } },
  { taskname_map: { a: ['a', true] }, exec_profiler: { a: 1 } },
  { redis: { url: 'http://x' } },
  { redis: { url: 'redis://h:1', prefix: 'a b' } },
  { mapper: 'heft', nodes: [{ name: 'n1', host: 'h' }] },
  { name: 'a', dir: '/a', tasks: [], dagTasks: [] },
  { name: 'a b', dir: '', tasks: [{ name: 't', numInputs: 0 }] },
];

describe('precompiled JSON schema validators', () => {
  it('precompiled.ts is current with the schemas (else: npm run gen:validators)', () => {
    expect(readFileSync(precompiledPath(), 'utf8') === precompiledSource(), 'config/schemas/precompiled.ts is stale: run npm run gen:validators').to.equal(true);
  });

  it('every schema of ours has a precompiled validator that judges like ajv compiling the schema', () => {
    const ajv = new Ajv(AJV_OPTIONS);
    for (const schema of PRECOMPILED_SCHEMAS) {
      const pre = precompiledValidator(schema);
      expect(pre, schema.$id).to.be.a('function');
      const compiled = ajv.compile(schema);
      for (const s of samples) expect(verdict(pre!, s), `${schema.$id} on ${JSON.stringify(s)}`).to.deep.equal(verdict(compiled, s));
      fc.assert(fc.property(fc.jsonValue(), (v) => {
        expect(verdict(pre!, v)).to.deep.equal(verdict(compiled, v));
      }), { numRuns: 200 });
    }
  });

  it('a schema changed since generation is compiled instead of using the stale code', () => {
    const edited: AnySchemaObject = { ...appConfigJsonSchema, required: ['taskname_map', 'exec_profiler'] };
    expect(precompiledValidator(edited)).to.equal(undefined);
    const validate = lazyValidator(edited)();
    expect(validate({ taskname_map: {} })).to.equal(false);
    expect(validate.errors?.[0]?.params).to.deep.equal({ missingProperty: 'exec_profiler' });
  });

  it('loading an app does not load the ajv compiler', () => {
    const script = [
      `const { loadApp } = await import(${JSON.stringify(join(repo, 'dist', 'config', 'app', 'load.js'))});`,
      `await loadApp(${JSON.stringify(join(repo, 'apps', 'dummy'))});`,
      "const { createRequire } = await import('node:module');",
      'const loaded = Object.keys(createRequire(import.meta.url).cache).filter((f) => /[\\\\/]ajv[\\\\/]dist[\\\\/](ajv|core|compile)/.test(f));',
      'process.stdout.write(JSON.stringify(loaded));',
    ].join('\n');
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: repo, encoding: 'utf8' });
    expect(JSON.parse(out)).to.deep.equal([]);
  });
});
