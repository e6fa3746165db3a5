// What went wrong talking to an MQTT broker, in words a person can act on: mqtt.js and Node's TLS
// layer report codes such as UNABLE_TO_VERIFY_LEAF_SIGNATURE or "Connection refused: Not
// authorized"; this names the cause and the setting to change. Secrets never get through: the
// password is scrubbed from every message, whatever library produced it.
import { maskUrl } from '../../config/cluster/mask.js';

export interface BrokerProblem {
  /** Short cause, with the library's own code and message in parentheses. */
  why: string;
  /** What to change; undefined for transient problems that need no action. */
  hint?: string;
  /** A configuration problem that retrying cannot fix (TLS or credentials). */
  permanent: boolean;
}

export interface BrokerContext {
  url: string;
  username?: string;
  password?: string;
  tls?: { ca?: string; cert?: string; key?: string; rejectUnauthorized?: boolean };
  /** Whether a connection ever succeeded: a reset before that hints at a port without TLS. */
  connectedBefore?: boolean;
}

type LibError = Error & { code?: string | number };

const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'UNABLE_TO_GET_ISSUER_CERT', 'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED', 'INVALID_CA',
]);
/** MQTT 3.1.1 CONNACK codes 4 and 5, MQTT 5 reason codes 134 and 135. */
const AUTH_CODES = new Set([4, 5, 134, 135]);

/** Replace every occurrence of the password (and the URL's password) by ***. */
export function scrubSecrets(text: string, ctx: Pick<BrokerContext, 'url' | 'password'>): string {
  const secrets = [ctx.password];
  try {
    const p = new URL(ctx.url).password;
    if (p) secrets.push(p, decodeURIComponent(p));
  } catch {
    // Not a URL: nothing more to hide.
  }
  let out = text;
  for (const s of secrets) if (s && s.length > 0) out = out.split(s).join('***');
  return out;
}

function hostPort(url: string): string {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return maskUrl(url);
  }
}

/** Explain an 'error' event of mqtt.js for a broker at ctx.url. */
export function explainBrokerError(err: LibError, ctx: BrokerContext): BrokerProblem {
  const code = err.code;
  const detail = scrubSecrets(typeof code === 'string' && !err.message.includes(code) ? `${code}: ${err.message}` : err.message, ctx);
  const at = hostPort(ctx.url);
  const msg = err.message;
  const tlsUrl = /^(mqtts|wss|tls):/i.test(ctx.url);
  if ((typeof code === 'string' && UNTRUSTED.has(code)) || msg === 'TLS not authorized') {
    return {
      why: `TLS: the broker's certificate is not signed by a trusted CA — ${detail}`,
      hint: ctx.tls?.ca !== undefined
        ? `the CA in mqtt.tls.ca (or JUPITER_MQTT_CA) did not sign the certificate of ${at}: point it at the CA that did (\`openssl s_client -connect ${at} -showcerts\` prints the broker's chain)`
        : `a broker with a private CA needs it configured: "mqtt": {"tls": {"ca": "ca.pem"}} in jupiter.config.json, or JUPITER_MQTT_CA=ca.pem`,
      permanent: true,
    };
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return { why: `TLS: the broker's certificate is not issued for this host name — ${detail}`, hint: 'connect with a host name or IP address that the certificate lists (`openssl x509 -noout -ext subjectAltName -in server.pem`), or reissue the certificate', permanent: true };
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return { why: `TLS: the broker's certificate ${code === 'CERT_HAS_EXPIRED' ? 'has expired' : 'is not valid yet'} — ${detail}`, hint: "renew the broker's certificate (or check this machine's clock)", permanent: true };
  }
  if (/wrong version number|packet length too long|unknown protocol/i.test(msg)) {
    return { why: `TLS handshake failed: ${at} does not speak TLS — ${detail}`, hint: 'use mqtt:// for a plain listener, or the port of the broker\'s TLS listener (usually 8883)', permanent: true };
  }
  // A plain MQTT listener resets a TLS client (mosquitto) instead of answering its handshake.
  if (tlsUrl && !ctx.connectedBefore && (code === 'ECONNRESET' || code === 'EPIPE')) {
    return { why: `TLS handshake failed: ${at} reset the connection, it may not speak TLS — ${detail}`, hint: `if ${at} is the broker's plain listener, use mqtt:// there, or the port of its TLS listener (usually 8883)`, permanent: false };
  }
  if (tlsUrl && /certificate required|bad certificate|unknown ca|alert handshake failure/i.test(msg)) {
    return {
      why: `TLS: the broker refused the client certificate — ${detail}`,
      hint: ctx.tls?.cert !== undefined
        ? 'the broker does not trust mqtt.tls.cert: use a client certificate signed by the CA the broker requires'
        : 'the broker requires a client certificate: set mqtt.tls.cert and mqtt.tls.key (or JUPITER_MQTT_CERT and JUPITER_MQTT_KEY)',
      permanent: true,
    };
  }
  if ((typeof code === 'number' && AUTH_CODES.has(code)) || /not authori[sz]ed|bad user ?name or password/i.test(msg)) {
    const who = ctx.username !== undefined ? `user ${JSON.stringify(ctx.username)}` : 'no user name given';
    return { why: `the broker refused the login (${who}) — ${detail}`, hint: 'check mqtt.username / mqtt.password in jupiter.config.json (or JUPITER_MQTT_USERNAME / JUPITER_MQTT_PASSWORD)', permanent: true };
  }
  if (code === 'ECONNREFUSED') return { why: `nothing listens at ${at} — ${detail}`, permanent: false };
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return { why: `host name not found — ${detail}`, hint: 'check the host in mqtt.url (or JUPITER_MQTT_URL)', permanent: false };
  }
  return { why: detail, permanent: false };
}
