// The one resolver of an `<app>` argument for commands that act on a deployment (teardown,
// status, logs, submit): the same forms `deploy` accepts — a name under apps/ or a folder path —
// both give the app's name (its folder's basename), which is what the deployment is keyed by.
import { basename, resolve } from 'node:path';
import { SAFE_NAME } from '../types.js';
import { resolveAppDir } from './load.js';

export async function appNameOf(arg: string): Promise<string> {
  try {
    return basename(await resolveAppDir(arg));
  } catch (e) {
    // A deployed app whose folder has since moved or gone is still named by its last path
    // component: `teardown` must be able to remove it.
    const name = basename(resolve(arg.trim() || '.'));
    if (arg.trim() !== '' && SAFE_NAME.test(name)) return name;
    throw e;
  }
}
