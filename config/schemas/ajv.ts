// One ajv instance for every schema of ours. Strict mode is on so that a typo in a schema is an
// error rather than a keyword silently ignored; open tuples (taskname_map's [script, is_dag, ...args])
// are intended, hence strictTuples off. Schemas compile on first use, so a broken schema can never
// stop the whole CLI from starting.
import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';

export const ajv = new Ajv({ allErrors: false, strict: true, strictTuples: false, allowUnionTypes: true });

export function lazyValidator<T>(schema: AnySchema): () => ValidateFunction<T> {
  let fn: ValidateFunction<T> | undefined;
  return () => (fn ??= ajv.compile<T>(schema));
}
