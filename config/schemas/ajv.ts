// One ajv configuration for every schema of ours. Strict mode is on so that a typo in a schema is
// an error rather than a keyword silently ignored; open tuples (taskname_map's [script, is_dag,
// ...args]) are intended, hence strictTuples off.
// Our schemas ship precompiled (precompiled.ts, ajv standalone code generated with these same
// options by `npm run gen:validators`), so a process that only validates, like a task runner,
// neither loads the ajv compiler nor compiles anything. A schema without a precompiled copy, or
// edited since (its JSON differs), is compiled here on first use: validation always follows the
// schema in the source. Compiling lazily also means a broken schema never stops the CLI starting.
import { createRequire } from 'node:module';
import type { Ajv as AjvInstance, AnySchema, ErrorObject, Options, ValidateFunction } from 'ajv';
import { precompiled as generated } from './precompiled.js';

export const AJV_OPTIONS = { allErrors: false, strict: true, strictTuples: false, allowUnionTypes: true } as const satisfies Options;

const precompiled = generated as unknown as Record<string, { schema: string; validate: ValidateFunction } | undefined>;

let instance: AjvInstance | undefined;

/**
 * The ajv class, loaded on first need (ajv is CommonJS, so require() keeps this sync): loading it
 * and compiling a schema cost a CLI process ~0.15 s at start-up when done at import time.
 */
export function ajvClass(): typeof AjvInstance {
  return (createRequire(import.meta.url)('ajv') as { Ajv: typeof AjvInstance }).Ajv;
}

/** The shared ajv compiler, loaded on first need. */
export function getAjv(): AjvInstance {
  if (!instance) {
    const Ajv = ajvClass();
    instance = new Ajv(AJV_OPTIONS);
  }
  return instance;
}

/** The precompiled validator of a schema, when it was generated from exactly this schema. */
export function precompiledValidator<T>(schema: AnySchema): ValidateFunction<T> | undefined {
  const id = typeof schema === 'object' ? schema.$id : undefined;
  const entry = id ? precompiled[id] : undefined;
  return entry && entry.schema === JSON.stringify(schema) ? (entry.validate as ValidateFunction<T>) : undefined;
}

export function lazyValidator<T>(schema: AnySchema): () => ValidateFunction<T> {
  let fn: ValidateFunction<T> | undefined;
  return () => (fn ??= precompiledValidator<T>(schema) ?? getAjv().compile<T>(schema));
}

/** ajv's one-line summary of validation errors. */
export function errorsText(errors: ErrorObject[] | null | undefined): string {
  return getAjv().errorsText(errors);
}
