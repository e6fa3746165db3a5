// app_config.ini: extra ports the app's containers need. [DOCKER_PORT] name = container port,
// [SVC_PORT] name = port other nodes reach it on. Lines are checked one by one first (for
// `file:line` messages), then the `ini` package reads the values (quotes, inline comments).
import { parse as parseIni } from 'ini';
import { inputError } from '../errors.js';
import { splitLines } from './text.js';

export interface AppPorts {
  docker: Record<string, number>;
  service: Record<string, number>;
}

const SECTIONS = { DOCKER_PORT: 'docker', SVC_PORT: 'service' } as const;
type Section = keyof typeof SECTIONS;
const PORT_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Parse app_config.ini text. `file` is only used in messages. */
export function parseAppConfigIni(text: string, file: string): AppPorts {
  const lines = splitLines(text);
  const keyLine = new Map<string, number>(); // "SECTION\0key" -> line
  let section: Section | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = i + 1;
    const t = lines[i]!.trim();
    if (t === '' || t.startsWith(';') || t.startsWith('#')) continue;
    const head = /^\[([^\]]*)\]$/.exec(t);
    if (head) {
      const name = head[1]!.trim();
      if (!(name in SECTIONS)) {
        throw inputError(`unknown section [${name}]`, { file, line, hint: 'app_config.ini has the sections [DOCKER_PORT] and [SVC_PORT]' });
      }
      section = name as Section;
      continue;
    }
    const kv = /^([^=]*?)\s*=\s*(.*)$/.exec(t);
    if (!kv) {
      throw inputError(`cannot read line ${JSON.stringify(t.slice(0, 60))}`, { file, line, hint: 'lines are [SECTION], NAME = port, or ; comments' });
    }
    if (!section) {
      throw inputError(`entry ${JSON.stringify(kv[1])} is outside a section`, { file, line, hint: 'put it under [DOCKER_PORT] or [SVC_PORT]' });
    }
    const key = kv[1]!;
    if (!PORT_NAME.test(key)) {
      throw inputError(`port name ${JSON.stringify(key)} is not allowed`, { file, line, hint: "use letters, digits, '_', '.', '-'" });
    }
    const id = `${section}\0${key}`;
    if (keyLine.has(id)) throw inputError(`${key} is set twice in [${section}] (first on line ${keyLine.get(id)})`, { file, line, hint: 'set each port once' });
    keyLine.set(id, line);
  }
  const parsed = parseIni(text) as Record<string, unknown>;
  const ports: AppPorts = { docker: {}, service: {} };
  for (const [id, line] of keyLine) {
    const [sec, key] = id.split('\0') as [Section, string];
    const raw = (parsed[sec] as Record<string, unknown> | undefined)?.[key];
    const value = typeof raw === 'string' ? raw.trim() : raw;
    if (typeof value !== 'string' || !/^\d{1,5}$/.test(value) || Number(value) < 1 || Number(value) > 65535) {
      throw inputError(`${key} in [${sec}] must be a port number 1-65535, got ${JSON.stringify(value)}`, { file, line, hint: 'write NAME = 57021' });
    }
    Object.defineProperty(ports[SECTIONS[sec]], key, { value: Number(value), enumerable: true, writable: true, configurable: true });
  }
  for (const key of Object.keys(ports.service)) {
    if (!(key in ports.docker)) {
      throw inputError(`${key} in [SVC_PORT] has no [DOCKER_PORT] entry`, {
        file, line: keyLine.get(`SVC_PORT\0${key}`), hint: `a service port forwards to the container port of the same name: add ${key} = <port> under [DOCKER_PORT]`,
      });
    }
  }
  return ports;
}
