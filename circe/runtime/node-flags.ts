// The node flags every task runner starts with (the process runtime's supervisor, the docker
// runtime's containers). V8 sizes a fresh process's old generation by what it holds (~14 MB for
// a runner) and starts marking whenever the room left is less than its young generation could
// promote. A runner moving 1 MiB items keeps each item's buffers and commands alive across a few
// scavenges, so ~1 MB a step reaches the old generation: a runner of bench:peers' 1 MiB pipeline
// ran a full mark-compact every ~150 ms (55 in 10 s, 21% of its CPU in the garbage collector).
// Starting the old generation at 64 MiB lets that garbage pile up to where one collection frees
// it all: 12 mark-compacts instead of 55, the pipeline's CPU per item 38 -> 29-30 ms and its
// items/s 47 -> 56-59 (32 MiB changed nothing: the room left stays below the young generation).
// The cost is up to that much more resident memory in a busy runner, so a container gets an
// eighth of its memory limit at most.

/** Initial old generation of a runner, MiB. */
export const INITIAL_OLD_SPACE_MB = 64;

/** Node flags of a runner; `memoryMb`: the container's memory limit, when it has one. */
export function runnerNodeFlags(memoryMb?: number): string[] {
  const mb = memoryMb === undefined ? INITIAL_OLD_SPACE_MB : Math.min(INITIAL_OLD_SPACE_MB, Math.floor(memoryMb / 8));
  return mb >= 16 ? [`--initial-old-space-size=${mb}`] : [];
}
