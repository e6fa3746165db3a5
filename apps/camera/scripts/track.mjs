// track: turns the detections of a frame into tracked objects and sends a small JSON result home.
// Each object lives in its own horizontal lane of the scene, so the lane of a detection's centroid
// is its track id: association needs no state across frames (items stay independent). Per object
// it re-measures the frame itself: the mean brightness of its pixels (its signature) and the
// shape, from how much of its bounding box it fills (a disc ~pi/4, a square 1).
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { THRESHOLD, inputPaths, jobPrefix, readPgm } from './camlib.mjs';

const LANES = 4;

export async function task(inputs, pathin, pathout) {
  const [file] = inputPaths(inputs, pathin);
  const { width, height, px, comments } = readPgm(await readFile(file), basename(file));
  const detections = JSON.parse(comments.detections ?? 'null');
  if (!Array.isArray(detections)) throw new Error(`${basename(file)}: no detections in the frame's header (not from detect?)`);
  const lanes = height >= 64 ? LANES : 1;
  const laneH = Math.floor(height / lanes);
  const objects = detections.map((d) => {
    const [x0, y0, x1, y1] = d.bbox;
    let n = 0, sum = 0;
    for (let y = y0; y <= y1; y++) {
      for (let x = x0; x <= x1; x++) {
        const v = px[y * width + x];
        if (v >= THRESHOLD) {
          n++;
          sum += v;
        }
      }
    }
    const fill = d.area / ((x1 - x0 + 1) * (y1 - y0 + 1));
    return {
      track: `lane${Math.min(lanes - 1, Math.floor(d.cy / laneH))}`,
      shape: fill > 0.9 ? 'square' : 'disc',
      cx: d.cx,
      cy: d.cy,
      area: d.area,
      bbox: d.bbox,
      brightness: n ? Math.round(sum / n) : 0,
    };
  });
  const result = {
    camera: comments.camera,
    frame: Number(comments.frame),
    seed: Number(comments.seed),
    width,
    height,
    sha256: comments.sha256,
    noise: Number(comments.noise),
    objects,
  };
  await mkdir(pathout, { recursive: true });
  const out = join(pathout, `${jobPrefix(file)}_track.json`);
  await writeFile(out, `${JSON.stringify(result)}\n`);
  return [out];
}
