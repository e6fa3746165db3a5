// capture: the entry task. A trigger from the home (a few bytes: camera, frame number, seed) makes
// the camera of this node "take" the frame: a deterministic 8-bit grey image (1024 x 1024 by
// default: 1 MiB) of the scene at that instant, written as a binary PGM whose header names the
// frame and carries a digest of its pixels (every later task checks it).
import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { digest, inputPaths, jobPrefix, parseTrigger, render, writePgm } from './camlib.mjs';

export async function task(inputs, pathin, pathout) {
  const [file] = inputPaths(inputs, pathin);
  const t = parseTrigger(await readFile(file, 'utf8'), basename(file));
  const px = render(t);
  await mkdir(pathout, { recursive: true });
  const out = join(pathout, `${jobPrefix(file)}_frame.pgm`);
  await writeFile(out, writePgm(t.width, t.height, px, { camera: t.camera, frame: t.frame, seed: t.seed, sha256: digest(px) }));
  return [out];
}
