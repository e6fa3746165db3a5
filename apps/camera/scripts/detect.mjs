// detect: finds the bright objects of a frame. Threshold, then 8-connected components labelled by
// an explicit-stack flood fill; components smaller than minArea() are sensor noise ("salt") and only
// counted. Passes the whole frame on, with its detections (area, centroid, bounding box, summed
// brightness) added to the PGM header.
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { THRESHOLD, inputPaths, jobPrefix, readPgm, writePgm } from './camlib.mjs';

/** Components of at least this many pixels are objects (scaled down for tiny frames). */
export const minArea = (width, height) => Math.max(2, Math.round((width * height) / 65536));

// Scratch buffers, kept across frames (the runner imports this module once): a seen-flag per pixel
// and the flood fill's stack.
let seen = new Uint8Array(0);
let stack = new Int32Array(0);

export function components(width, height, px) {
  const n = width * height;
  if (seen.length < n) {
    seen = new Uint8Array(n);
    stack = new Int32Array(n);
  } else {
    seen.fill(0, 0, n);
  }
  const found = [];
  for (let start = 0; start < n; start++) {
    if (px[start] < THRESHOLD || seen[start] !== 0) continue;
    let top = 0;
    stack[top++] = start;
    seen[start] = 1;
    let area = 0, sx = 0, sy = 0, sum = 0;
    let x0 = width, y0 = height, x1 = -1, y1 = -1;
    while (top > 0) {
      const i = stack[--top];
      const x = i % width;
      const y = (i - x) / width;
      area++;
      sx += x;
      sy += y;
      sum += px[i];
      if (x < x0) x0 = x;
      if (x > x1) x1 = x;
      if (y < y0) y0 = y;
      if (y > y1) y1 = y;
      for (let dy = -1; dy <= 1; dy++) {
        const ny = y + dy;
        if (ny < 0 || ny >= height) continue;
        for (let dx = -1; dx <= 1; dx++) {
          const nx = x + dx;
          if (nx < 0 || nx >= width) continue;
          const j = ny * width + nx;
          if (seen[j] === 0 && px[j] >= THRESHOLD) {
            seen[j] = 1;
            stack[top++] = j;
          }
        }
      }
    }
    found.push({ area, cx: sx / area, cy: sy / area, bbox: [x0, y0, x1, y1], sum });
  }
  return found;
}

const round2 = (v) => Math.round(v * 100) / 100;

export async function task(inputs, pathin, pathout) {
  const [file] = inputPaths(inputs, pathin);
  const { width, height, px, comments } = readPgm(await readFile(file), basename(file));
  const all = components(width, height, px);
  const min = minArea(width, height);
  const objects = all.filter((c) => c.area >= min)
    .map((c) => ({ ...c, cx: round2(c.cx), cy: round2(c.cy) }))
    .sort((a, b) => a.cy - b.cy || a.cx - b.cx);
  await mkdir(pathout, { recursive: true });
  const out = join(pathout, `${jobPrefix(file)}_detect.pgm`);
  await writeFile(out, writePgm(width, height, px, { ...comments, noise: all.length - objects.length, detections: objects }));
  return [out];
}
