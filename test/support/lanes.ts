// Which test files run alone and how the others split into two lanes (run-suite.ts).

/** Files that run alone, before the lanes (paths relative to dist/). */
export const ALONE = /^test\/(testbed\/|profilers\/(netns|adapt-netns)\.test\.js$)/;

/** Files that start Docker engines (or deploy on one): one lane for all of them. */
export const DOCKER = /^test\/(docker\/|e2e\/(docker-host|private-dockerd|newcomer-state|original-apps)\.test\.js$|faults\/kill-runner\.test\.js$|profilers\/exec-profile-original\.test\.js$)/;

/** Weight of a file whose time is not known yet (s). */
export const UNKNOWN_SEC = 5;

interface Lane {
  files: string[];
  sec: number;
}

/**
 * Two lanes of about equal time (longest first, each to the lighter lane), each in path order;
 * the Docker files stay together.
 */
export function balance(files: string[], seconds: Record<string, number>): [string[], string[]] {
  const weight = (f: string): number => seconds[f] ?? UNKNOWN_SEC;
  const docker = files.filter((f) => DOCKER.test(f));
  const units = [...(docker.length ? [docker] : []), ...files.filter((f) => !DOCKER.test(f)).map((f) => [f])]
    .map((group) => ({ group, sec: group.reduce((s, f) => s + weight(f), 0) }))
    .sort((a, b) => b.sec - a.sec || a.group[0]!.localeCompare(b.group[0]!));
  const lanes: [Lane, Lane] = [{ files: [], sec: 0 }, { files: [], sec: 0 }];
  for (const u of units) {
    const lane = lanes[0].sec <= lanes[1].sec ? lanes[0] : lanes[1];
    lane.files.push(...u.group);
    lane.sec += u.sec;
  }
  return [lanes[0].files.sort(), lanes[1].files.sort()];
}
