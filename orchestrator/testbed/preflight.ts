// What `testbed up` needs on this machine: Linux, root, and the tools it drives.
import { runtimeError } from '../../config/errors.js';
import { onPath } from '../stack/dockerd.js';

const TOOLS: Array<[string, string]> = [
  ['ip', 'iproute2'], ['tc', 'iproute2'], ['iptables', 'iptables'], ['nsenter', 'util-linux'],
  ['dockerd', 'docker.io'], ['redis-server', 'redis-server'],
];

export function checkTestbedHost(): void {
  if (process.platform !== 'linux') throw runtimeError('the testbed needs Linux (network namespaces, tc, iptables)', { hint: 'run it on a Linux machine or VM' });
  if (process.getuid?.() !== 0) {
    throw runtimeError('the testbed needs root: it creates network namespaces, veths, a bridge, tc qdiscs, iptables rules and Docker engines', {
      hint: 'run it as root, e.g. `sudo jupiter testbed up edge-fog-cloud`',
    });
  }
  const missing = TOOLS.filter(([bin]) => !onPath(bin));
  if (missing.length) {
    throw runtimeError(`the testbed needs ${missing.map(([b]) => b).join(', ')}, not found on PATH`, {
      hint: `install the Debian packages ${[...new Set(missing.map(([, p]) => p))].join(' ')} (\`sudo npm run setup\` installs them)`,
    });
  }
}
