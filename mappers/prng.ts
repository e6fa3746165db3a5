// A small seeded PRNG (mulberry32) so every random choice is reproducible from a seed.

export interface Rng {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Uniform in [lo, hi). */
  range(lo: number, hi: number): number;
}

export function createRng(seed: number): Rng {
  let s = (Math.floor(seed) ^ 0x9e3779b9) >>> 0;
  const next = (): number => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    range: (lo, hi) => lo + next() * (hi - lo),
  };
}

/** A seed derived from a base seed and a name (FNV-1a), e.g. one stream per task. */
export function deriveSeed(seed: number, name: string): number {
  let h = (0x811c9dc5 ^ Math.floor(seed)) >>> 0;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** The random stream used for decisions about one named thing (identical wherever it runs). */
export function rngFor(seed: number, name: string): Rng {
  return createRng(deriveSeed(seed, name));
}
