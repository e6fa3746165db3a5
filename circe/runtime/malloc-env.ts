// How the processes Jupiter starts (runners, node hosts, the stack's companions, and the Python
// workers below them) allocate large buffers. glibc's malloc serves an allocation above its mmap
// threshold (128 KiB at start) with fresh pages from the kernel and gives them back when freed,
// so every 1 MiB item a runner receives, copies, writes and reads costs a few hundred page faults
// per buffer. On these 2-vCPU VMs a fresh 1 MiB Buffer took 2.4 ms (zeroed or copied into) and a
// 1 MiB readFileSync 3.0 ms, against 0.03 and 0.4 ms once freed memory stays in the heap: the
// threshold below keeps buffers up to 16 MiB in the heap, the trim threshold lets up to 32 MiB of
// freed memory stay there for the next item instead of going back to the kernel at once. The
// cost is that much resident memory per process at most. Larger buffers are mapped as before.
// A setting the user's environment already has is kept.

export const MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: String(16 * 1024 * 1024),
  MALLOC_TRIM_THRESHOLD_: String(32 * 1024 * 1024),
};

/** `env` with the malloc settings it does not set itself. */
export function withMallocEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const [k, v] of Object.entries(MALLOC_ENV)) if (out[k] === undefined) out[k] = v;
  return out;
}
