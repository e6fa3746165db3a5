// Which machine a node runs on, for "nodes on one machine share its cores": the kernel's boot id.
// Containers and network namespaces on one kernel share its cores and see the same boot id
// (/proc/sys/kernel/random/boot_id is not namespaced), while their hostnames differ per container
// and may agree by accident across namespaces. Elsewhere (no /proc) the hostname stands in.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

let cached: string | undefined;

export function machineId(): string {
  if (cached === undefined) {
    let id = '';
    try {
      id = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      // not Linux, or /proc not mounted
    }
    cached = id ? `boot:${id}` : `host:${hostname()}`;
  }
  return cached;
}
