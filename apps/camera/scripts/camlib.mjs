// Helpers shared by the camera pipeline's tasks (not a task itself): the trigger format, the
// deterministic scene (what the camera sees), PGM frames with header comments, and the job id.
import { createHash } from 'node:crypto';
import { basename, resolve } from 'node:path';

export const DEFAULT_SIZE = 1024; // 1024 x 1024 8-bit pixels: 1 MiB per frame
export const THRESHOLD = 128; // background noise stays below it, objects above it
const LANES = 4; // one object per horizontal lane, so objects never touch
const INTENSITIES = [150, 180, 210, 240];

/** Jupiter's job id: the file name before the first `_`, or before the first `.` without `_`. */
export function jobPrefix(file) {
  const name = basename(file);
  const u = name.indexOf('_');
  if (u >= 0) return name.slice(0, u);
  const d = name.indexOf('.');
  return d >= 0 ? name.slice(0, d) : name;
}

/** The task contract gives one file name or a list; names are relative to pathin. */
export function inputPaths(inputs, pathin) {
  return (Array.isArray(inputs) ? inputs : [inputs]).map((f) => resolve(pathin, f));
}

/** mulberry32: a small seeded PRNG, 32-bit state, returns uint32. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  };
}

/** A trigger: {"camera": "cam0", "frame": n, "seed": s} plus optional "width"/"height" (pixels). */
export function parseTrigger(text, name) {
  let t;
  try {
    t = JSON.parse(text);
  } catch {
    throw new Error(`${name}: a trigger is JSON like {"camera":"cam0","frame":1,"seed":7}`);
  }
  const int = (v, d, min, max) => {
    const x = v === undefined ? d : v;
    if (!Number.isInteger(x) || x < min || x > max) throw new Error(`${name}: ${JSON.stringify(v)} is not an integer in ${min}..${max}`);
    return x;
  };
  return {
    camera: typeof t.camera === 'string' && /^[\w-]{1,32}$/.test(t.camera) ? t.camera : 'cam0',
    frame: int(t.frame, undefined, 0, 1e9),
    seed: int(t.seed, 1, 0, 2 ** 32 - 1),
    width: int(t.width, DEFAULT_SIZE, 4, 8192),
    height: int(t.height, DEFAULT_SIZE, 4, 8192),
  };
}

/** Bounce a coordinate between lo and hi (a triangle wave), integer in, integer out. */
function bounce(v, lo, hi) {
  const span = hi - lo;
  if (span <= 0) return lo;
  const m = ((v % (2 * span)) + 2 * span) % (2 * span);
  return lo + (m <= span ? m : 2 * span - m);
}

/**
 * What the camera sees in frame `frame` of scene `seed`: one object per lane (a disc or a square,
 * its own brightness), moving at a constant speed and bouncing off the lane's borders. Frames
 * smaller than 64 pixels high hold a single object.
 */
export function scene({ seed, frame, width, height }) {
  const rnd = prng(seed ^ 0x9e3779b9);
  const lanes = height >= 64 ? LANES : 1;
  const laneH = Math.floor(height / lanes);
  const r = Math.max(1, Math.round(Math.min(width, laneH) * 0.16));
  const objects = [];
  for (let i = 0; i < lanes; i++) {
    const top = i * laneH;
    const x0 = rnd() % width;
    const y0 = rnd() % laneH;
    const vx = (rnd() % 23) - 11 || 7;
    const vy = (rnd() % 9) - 4;
    const shape = (rnd() >>> 16) & 1 ? 'disc' : 'square';
    objects.push({
      lane: i,
      shape,
      r,
      intensity: INTENSITIES[(i + seed) % INTENSITIES.length],
      x: bounce(x0 + vx * frame, r + 1, width - r - 2),
      y: bounce(top + y0 + vy * frame, top + r + 1, top + laneH - r - 2),
    });
  }
  return objects;
}

/** Render the frame: noise below the threshold, rare single-pixel "salt", the scene's objects. */
export function render(t) {
  const { width, height } = t;
  const px = Buffer.allocUnsafe(width * height);
  let s = (Math.imul(t.seed, 0x85ebca6b) ^ Math.imul(t.frame + 1, 0xc2b2ae35)) >>> 0 || 1;
  for (let i = 0; i < px.length; i++) {
    // xorshift32
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    px[i] = (s & 0xfff) === 0 ? 255 : (s >>> 8) & 63;
  }
  for (const o of scene(t)) {
    for (let y = o.y - o.r; y <= o.y + o.r; y++) {
      for (let x = o.x - o.r; x <= o.x + o.r; x++) {
        const dx = x - o.x;
        const dy = y - o.y;
        if (o.shape === 'disc' && dx * dx + dy * dy > o.r * o.r) continue;
        const i = y * width + x;
        px[i] = o.intensity - (px[i] & 15);
      }
    }
  }
  return px;
}

export const digest = (px) => createHash('sha256').update(px).digest('hex').slice(0, 32);

/** A binary PGM (P5) with `# key value` comment lines in its header. */
export function writePgm(width, height, px, comments) {
  const head = ['P5', ...Object.entries(comments).map(([k, v]) => `# ${k} ${typeof v === 'string' ? v : JSON.stringify(v)}`), `${width} ${height}`, '255', ''].join('\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), px]);
}

/** Parse a binary PGM written by writePgm: its size, pixels (a view, not a copy) and comments. */
export function readPgm(buf, name) {
  const comments = {};
  const fields = [];
  let at = 0;
  const line = () => {
    const nl = buf.indexOf(10, at);
    if (nl < 0) throw new Error(`${name}: truncated PGM header`);
    const l = buf.toString('latin1', at, nl);
    at = nl + 1;
    return l;
  };
  if (line() !== 'P5') throw new Error(`${name}: not a binary PGM (P5)`);
  while (fields.length < 3) {
    const l = line();
    if (l.startsWith('#')) {
      const m = /^# (\S+) (.*)$/.exec(l);
      if (m) comments[m[1]] = m[2];
    } else {
      fields.push(...l.trim().split(/\s+/).map(Number));
    }
  }
  const [width, height, maxval] = fields;
  if (maxval !== 255 || !(width > 0) || !(height > 0)) throw new Error(`${name}: unsupported PGM ${width}x${height} maxval ${maxval}`);
  const px = buf.subarray(at);
  if (px.length !== width * height) throw new Error(`${name}: ${px.length} pixel bytes, expected ${width * height}`);
  if (comments.sha256 !== undefined && digest(px) !== comments.sha256) throw new Error(`${name}: pixels do not match the frame's digest (corrupted on the way)`);
  return { width, height, px, comments };
}
