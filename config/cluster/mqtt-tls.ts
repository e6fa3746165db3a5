// TLS settings of an external MQTT broker (mqtts:// / wss://): mqtt.tls in jupiter.config.json,
// overridden by JUPITER_MQTT_CA / _CERT / _KEY / _INSECURE. Every file is checked here, at load
// time, so a wrong path, a file that is not PEM or a key that does not belong to its certificate
// is a `file:line` error from `jupiter validate` instead of a broker that silently never connects.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { resolve } from 'node:path';
import { inputError, type ErrorLocation } from '../errors.js';
import { lineOfPointer } from '../app/json.js';
import { isFile, readTextFile } from '../app/text.js';
import type { ClusterConfig } from '../types.js';
import type { MqttTlsFile } from '../schemas/cluster-config.js';
import { maskUrl } from './mask.js';

export type MqttTls = NonNullable<ClusterConfig['mqtt']['tls']>;

type PemKind = 'ca' | 'cert' | 'key';
const KINDS: PemKind[] = ['ca', 'cert', 'key'];
export const MQTT_TLS_ENV: Record<PemKind, string> = { ca: 'JUPITER_MQTT_CA', cert: 'JUPITER_MQTT_CERT', key: 'JUPITER_MQTT_KEY' };
export const MQTT_INSECURE_ENV = 'JUPITER_MQTT_INSECURE';
/** URL schemes that speak TLS (mqtt.js: tls:// is mqtts://). */
export const MQTT_TLS_PROTOCOLS = ['mqtts:', 'wss:', 'tls:'];

const PEM_HINT: Record<PemKind, string> = {
  ca: 'give the PEM file (-----BEGIN CERTIFICATE-----) of the CA that signed the broker certificate',
  cert: 'give the client certificate as PEM (-----BEGIN CERTIFICATE-----), e.g. openssl x509 -in client.der -inform der -out client.pem',
  key: 'give the unencrypted private key as PEM (-----BEGIN PRIVATE KEY-----), e.g. openssl pkey -in client.key -out client-key.pem',
};

interface Where {
  /** How the setting is named in messages: mqtt.tls.ca or JUPITER_MQTT_CA. */
  name: string;
  loc: ErrorLocation;
}

/** Read one PEM file and check that it parses as what it claims to be. */
async function checkPem(kind: PemKind, path: string, shown: string, w: Where): Promise<string> {
  if (!(await isFile(path))) {
    throw inputError(`${w.name}: file not found: ${shown}`, { ...w.loc, hint: w.loc.file ? `paths are relative to ${w.loc.file}` : 'paths are relative to the working directory' });
  }
  let text: string;
  try {
    text = await readTextFile(path, { what: `the ${kind} PEM file` });
  } catch {
    throw inputError(`${w.name}: ${shown} is not a text PEM file`, { ...w.loc, hint: PEM_HINT[kind] });
  }
  try {
    if (kind === 'key') createPrivateKey(text);
    else new X509Certificate(text);
  } catch (e) {
    const why = /passphrase/i.test((e as Error).message) ? 'the key is encrypted' : `not a PEM ${kind === 'key' ? 'private key' : 'certificate'}`;
    throw inputError(`${w.name}: ${shown}: ${why}`, { ...w.loc, hint: PEM_HINT[kind] });
  }
  return text;
}

export interface MqttTlsSources {
  file?: MqttTlsFile;
  /** Text and shown name of jupiter.config.json (for line numbers), and its folder. */
  text: string;
  jsonShown: string;
  jsonDir: string;
  /** Folder relative to which environment paths are resolved. */
  dir: string;
  env: NodeJS.ProcessEnv;
  /** The final broker URL (after environment overrides). */
  url: string | undefined;
  /** Names of environment variables used get pushed here. */
  used: string[];
}

/** mqtt.tls with absolute paths, or undefined when no TLS setting is given anywhere. */
export async function resolveMqttTls(s: MqttTlsSources): Promise<MqttTls | undefined> {
  const tls: MqttTls = {};
  const fileLoc = (pointer: string): ErrorLocation => ({ file: s.jsonShown, line: lineOfPointer(s.text, pointer) });
  const origin: Partial<Record<PemKind | 'rejectUnauthorized', Where>> = {};
  const pem: Partial<Record<PemKind, string>> = {};
  for (const k of KINDS) {
    const fromEnv = s.env[MQTT_TLS_ENV[k]];
    const fromFile = s.file?.[k];
    let w: Where;
    let path: string;
    let shown: string;
    if (fromEnv) {
      w = { name: MQTT_TLS_ENV[k], loc: {} };
      path = resolve(s.dir, fromEnv);
      shown = fromEnv;
      s.used.push(MQTT_TLS_ENV[k]);
    } else if (fromFile !== undefined) {
      w = { name: `mqtt.tls.${k}`, loc: fileLoc(`/mqtt/tls/${k}`) };
      path = resolve(s.jsonDir, fromFile);
      shown = fromFile;
    } else {
      continue;
    }
    pem[k] = await checkPem(k, path, shown, w);
    tls[k] = path;
    origin[k] = w;
  }
  if (s.file?.rejectUnauthorized !== undefined) {
    tls.rejectUnauthorized = s.file.rejectUnauthorized;
    origin.rejectUnauthorized = { name: 'mqtt.tls.rejectUnauthorized', loc: fileLoc('/mqtt/tls/rejectUnauthorized') };
  }
  const insecure = s.env[MQTT_INSECURE_ENV];
  if (insecure) {
    if (insecure !== '1' && insecure !== '0') {
      throw inputError(`${MQTT_INSECURE_ENV} must be 1 or 0, got ${JSON.stringify(insecure)}`, { hint: `${MQTT_INSECURE_ENV}=1 accepts any broker certificate (test set-ups only); unset it to verify` });
    }
    tls.rejectUnauthorized = insecure !== '1';
    origin.rejectUnauthorized = { name: MQTT_INSECURE_ENV, loc: {} };
    s.used.push(MQTT_INSECURE_ENV);
  }
  const first = Object.values(origin)[0];
  if (!first) return undefined;

  // A certificate without its key (or the other way round) cannot authenticate.
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    const w = (origin.cert ?? origin.key)!;
    const [has, lacks] = tls.cert !== undefined ? ['cert', 'key'] : ['key', 'cert'];
    throw inputError(`${w.name} is set but the client ${lacks} is not`, { ...w.loc, hint: `a client certificate needs its private key: give both mqtt.tls.cert and mqtt.tls.key (or ${MQTT_TLS_ENV.cert} and ${MQTT_TLS_ENV.key}), or neither (${has} alone is useless)` });
  }
  if (pem.cert !== undefined && pem.key !== undefined && !new X509Certificate(pem.cert).checkPrivateKey(createPrivateKey(pem.key))) {
    const w = origin.key!;
    throw inputError(`${w.name}: the private key does not belong to the client certificate ${s.file?.cert ?? s.env[MQTT_TLS_ENV.cert]}`, { ...w.loc, hint: 'give the key the certificate was issued for (openssl x509 -noout -pubkey -in cert.pem and openssl pkey -pubout -in key.pem must print the same key)' });
  }
  // TLS settings only make sense for a TLS connection to an external broker.
  const where: Where = s.file !== undefined ? { name: 'mqtt.tls', loc: fileLoc('/mqtt/tls') } : first;
  if (s.url === undefined) {
    throw inputError(`${where.name} is set but no external broker is: mqtt.url is missing`, { ...where.loc, hint: 'TLS applies to an external broker: set "mqtt": {"url": "mqtts://host:8883", ...} (or JUPITER_MQTT_URL); the embedded broker listens on 127.0.0.1 without TLS' });
  }
  let protocol = '';
  try {
    protocol = new URL(s.url).protocol;
  } catch {
    protocol = '';
  }
  if (!MQTT_TLS_PROTOCOLS.includes(protocol)) {
    throw inputError(`${where.name} is set but the broker URL ${JSON.stringify(maskUrl(s.url))} does not use TLS`, { ...where.loc, hint: 'use mqtts://host:8883 (or wss:// for WebSockets), or drop the TLS settings' });
  }
  return tls;
}
