// MQTT over TLS against Debian's mosquitto: a throwaway CA and certificates made with openssl, a
// TLS listener that wants a user name and password (and, in a second broker, a client
// certificate). The path under test is the hub's: jupiter.config.json -> loadClusterConfig ->
// publisherOptionsFromCluster -> TelemetryBridge. Wrong or missing CAs, wrong credentials and a
// plain port must give one warning naming the broker with a hint, and the password never shows.
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import mqtt, { type MqttClient } from 'mqtt';
import { startTestRedis, type TestRedis } from '../support/redis.js';
import { haveMosquitto, startMosquitto, type TestMosquitto } from '../support/mosquitto.js';
import { runCli } from '../support/cli.js';
import { appsDir } from '../support/paths.js';
import { loadClusterConfig } from '../../config/cluster/load.js';
import { isJupiterError } from '../../config/errors.js';
import { publisherOptionsFromCluster } from '../../orchestrator/telemetry/mqtt-config.js';
import { TelemetryBridge } from '../../orchestrator/telemetry/bridge.js';
import { MqttPublisher } from '../../orchestrator/telemetry/publisher.js';
import { SEVEN, emptyTally, itemEvents, mappingRecord, writeDeployment, xaddEvents } from '../dashboard/feed.js';

const PREFIX = 'jupiter:';
const USER = 'jupiter';
const PASSWORD = 'tls-S3cret/pw@x';
const fast = { statsIntervalMs: 200, pollIntervalMs: 200, blockMs: 200 };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(what: string, fn: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

interface Pki {
  dir: string;
  ca: string;
  otherCa: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** A CA with a server (localhost, 127.0.0.1) and a client certificate, plus an unrelated CA. */
function makePki(dir: string): Pki {
  mkdirSync(dir, { recursive: true });
  const p = (f: string): string => join(dir, f);
  const ssl = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const caConf = (cn: string): string => {
    const f = p(`${cn}.cnf`);
    writeFileSync(f, [
      '[req]', 'distinguished_name = dn', 'x509_extensions = v3_ca', 'prompt = no',
      '[dn]', `CN = ${cn}`,
      '[v3_ca]', 'basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign', 'subjectKeyIdentifier = hash',
    ].join('\n'));
    return f;
  };
  ssl('req', '-x509', ...ec, '-days', '2', '-config', caConf('jupiter-test-ca'), '-keyout', p('ca.key'), '-out', p('ca.pem'));
  ssl('req', '-x509', ...ec, '-days', '2', '-config', caConf('some-other-ca'), '-keyout', p('other-ca.key'), '-out', p('other-ca.pem'));
  const leaf = (name: string, ext: string[]): void => {
    writeFileSync(p(`${name}.ext`), ext.join('\n'));
    ssl('req', ...ec, '-subj', `/CN=${name}`, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`));
    ssl('x509', '-req', '-in', p(`${name}.csr`), '-CA', p('ca.pem'), '-CAkey', p('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', p(`${name}.ext`), '-out', p(`${name}.pem`));
  };
  leaf('localhost', ['basicConstraints = CA:FALSE', 'keyUsage = critical,digitalSignature', 'extendedKeyUsage = serverAuth', 'subjectAltName = DNS:localhost,IP:127.0.0.1']);
  leaf('jupiter-client', ['basicConstraints = CA:FALSE', 'keyUsage = critical,digitalSignature', 'extendedKeyUsage = clientAuth']);
  return {
    dir, ca: p('ca.pem'), otherCa: p('other-ca.pem'), serverCert: p('localhost.pem'), serverKey: p('localhost.key'),
    clientCert: p('jupiter-client.pem'), clientKey: p('jupiter-client.key'),
  };
}

describe('telemetry over MQTT/TLS (mosquitto, openssl)', function () {
  this.timeout(60_000);
  let tmp = '';
  let pki: Pki;
  let broker: TestMosquitto;
  let redis: TestRedis;
  let client: Redis;
  /** Every line any bridge logged and every error message seen, checked for the password at the end. */
  const seen: string[] = [];
  let n = 0;

  before(async function () {
    if (!haveMosquitto() || !haveOpenssl()) this.skip();
    tmp = mkdtempSync(join(tmpdir(), 'jupiter-mqtt-tls-'));
    pki = makePki(join(tmp, 'pki'));
    broker = await startMosquitto({ username: USER, password: PASSWORD, tls: { certFile: pki.serverCert, keyFile: pki.serverKey } });
    redis = await startTestRedis();
    client = new Redis(redis.url);
    await writeDeployment(client, PREFIX, mappingRecord(SEVEN));
  });

  after(async () => {
    client?.disconnect();
    await redis?.stop();
    await broker?.dispose();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** A folder with this jupiter.config.json; PEM paths in it are relative to tmp/pki via ../pki. */
  function configDir(mqttSection: object): string {
    const dir = join(tmp, `cfg${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, 'jupiter.config.json'), `${JSON.stringify({ mqtt: mqttSection }, null, 2)}\n`);
    return dir;
  }

  async function bridgeFor(dir: string, env: NodeJS.ProcessEnv = {}): Promise<{ bridge: TelemetryBridge; log: string[] }> {
    const cluster = await loadClusterConfig({ dir, env });
    const opts = publisherOptionsFromCluster(cluster);
    expect(opts).to.not.equal(undefined);
    const log: string[] = [];
    const bridge = new TelemetryBridge({ redisUrl: redis.url, prefix: PREFIX, ...fast, mqtt: { ...opts!, reconnectMs: 100 }, log: (l) => { log.push(l); seen.push(l); } });
    await bridge.start();
    return { bridge, log };
  }

  async function tlsSubscriber(url: string, filters: string[], extra: object = {}): Promise<{ sub: MqttClient; got: string[] }> {
    const sub = await mqtt.connectAsync(url, { username: USER, password: PASSWORD, ca: readFileSync(pki.ca), reconnectPeriod: 200, ...extra });
    const got: string[] = [];
    sub.on('message', (_t, payload) => got.push(payload.toString()));
    await sub.subscribeAsync(filters);
    return { sub, got };
  }

  it('connects with mqtts:// and the CA of mqtt.tls.ca; messages reach a TLS subscriber', async () => {
    const dir = configDir({ url: broker.tlsUrl, username: USER, password: PASSWORD, tls: { ca: '../pki/ca.pem' } });
    const cluster = await loadClusterConfig({ dir, env: {} });
    expect(cluster.mqtt.tls).to.deep.equal({ ca: pki.ca });
    const { sub, got } = await tlsSubscriber(broker.tlsUrl!, ['jupiter/#']);
    const { bridge, log } = await bridgeFor(dir);
    try {
      expect(bridge.mqtt?.connected).to.equal(true);
      const tally = emptyTally(SEVEN.tasks);
      await xaddEvents(client, PREFIX, SEVEN.app, itemEvents(SEVEN, 'tls-1', Date.now(), {}, tally));
      await until('task events over TLS', () => got.some((g) => g.includes('"item":"tls-1"')));
      await until('the mapping over TLS', () => got.some((g) => g.includes('"mapper":"heft"')));
      expect(log).to.deep.equal([]);
      expect(bridge.mqtt!.lastProblem).to.equal(undefined);
    } finally {
      await bridge.stop();
      await sub.endAsync();
    }
  });

  it('takes the CA from JUPITER_MQTT_CA (relative to the working folder) over the file', async () => {
    const dir = configDir({ url: broker.tlsUrl, username: USER, tls: { ca: '../pki/other-ca.pem' } });
    const { bridge, log } = await bridgeFor(dir, { JUPITER_MQTT_CA: '../pki/ca.pem', JUPITER_MQTT_PASSWORD: PASSWORD });
    try {
      expect(bridge.mqtt?.connected).to.equal(true);
      expect(log).to.deep.equal([]);
    } finally {
      await bridge.stop();
    }
  });

  it('a wrong CA: one warning naming the broker (password masked) with a hint about mqtt.tls.ca', async () => {
    const url = broker.tlsUrl!.replace('mqtts://', `mqtts://${USER}:${encodeURIComponent(PASSWORD)}@`);
    const dir = configDir({ url, tls: { ca: '../pki/other-ca.pem' } });
    const { bridge, log } = await bridgeFor(dir);
    try {
      await sleep(500); // several reconnect attempts
      expect(bridge.mqtt?.connected).to.equal(false);
      expect(log, log.join('\n')).to.have.length(1);
      const line = log[0]!;
      expect(line).to.include(`MQTT broker mqtts://${USER}:***@127.0.0.1:${broker.tlsPort} unreachable (TLS: the broker's certificate is not signed by a trusted CA`);
      expect(line).to.match(/\n {2}hint: the CA in mqtt\.tls\.ca \(or JUPITER_MQTT_CA\) did not sign the certificate of 127\.0\.0\.1:\d+/);
      expect(bridge.mqtt!.lastProblem?.permanent).to.equal(true);
      console.log(`      ${line.replace(/\n/g, '\n      ')}`);
    } finally {
      await bridge.stop();
    }
  });

  it('no CA at all: the hint shows how to configure one', async () => {
    const dir = configDir({ url: broker.tlsUrl, username: USER, password: PASSWORD });
    const { bridge, log } = await bridgeFor(dir);
    try {
      await until('the warning', () => log.length > 0);
      expect(bridge.mqtt?.connected).to.equal(false);
      expect(log[0]).to.include(`MQTT broker ${broker.tlsUrl} unreachable (TLS: the broker's certificate is not signed by a trusted CA`);
      expect(log[0]).to.include('hint: a broker with a private CA needs it configured: "mqtt": {"tls": {"ca": "ca.pem"}}');
    } finally {
      await bridge.stop();
    }
  });

  it('rejectUnauthorized false (test set-ups) connects without a CA', async () => {
    const dir = configDir({ url: broker.tlsUrl, username: USER, password: PASSWORD, tls: { rejectUnauthorized: false } });
    const { bridge, log } = await bridgeFor(dir);
    try {
      expect(bridge.mqtt?.connected).to.equal(true);
      expect(log).to.deep.equal([]);
    } finally {
      await bridge.stop();
    }
  });

  it('a wrong password over TLS: the login is refused, with a hint, and the password is not shown', async () => {
    const dir = configDir({ url: broker.tlsUrl, username: USER, password: `${PASSWORD}-wrong`, tls: { ca: '../pki/ca.pem' } });
    const { bridge, log } = await bridgeFor(dir);
    try {
      await until('the warning', () => log.length > 0);
      await sleep(300);
      expect(log).to.have.length(1);
      expect(log[0]).to.include(`the broker refused the login (user "${USER}")`);
      expect(log[0]).to.include('hint: check mqtt.username / mqtt.password');
      expect(log[0]).to.not.include('-wrong');
    } finally {
      await bridge.stop();
    }
  });

  it('mqtts:// to a plain listener: says the port does not speak TLS', async () => {
    const dir = configDir({ url: `mqtts://127.0.0.1:${broker.port}`, username: USER, password: PASSWORD, tls: { ca: '../pki/ca.pem' } });
    const { bridge, log } = await bridgeFor(dir);
    try {
      await until('the warning', () => log.length > 0);
      expect(log[0]).to.include(`MQTT broker mqtts://127.0.0.1:${broker.port} unreachable (TLS handshake failed: 127.0.0.1:${broker.port} reset the connection, it may not speak TLS`);
      expect(log[0]).to.include(`hint: if 127.0.0.1:${broker.port} is the broker's plain listener, use mqtt:// there`);
    } finally {
      await bridge.stop();
    }
  });

  it('a broker that requires client certificates: refused without, connects with mqtt.tls.cert/key', async () => {
    const strict = await startMosquitto({
      username: USER, password: PASSWORD,
      tls: { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.ca, requireCertificate: true },
    });
    try {
      const without = await bridgeFor(configDir({ url: strict.tlsUrl, username: USER, password: PASSWORD, tls: { ca: '../pki/ca.pem' } }));
      try {
        await until('the warning', () => without.log.length > 0);
        expect(without.bridge.mqtt?.connected).to.equal(false);
        expect(without.log[0]).to.include(`MQTT broker ${strict.tlsUrl} unreachable (TLS: the broker refused the client certificate`);
        expect(without.log[0]).to.include('hint: the broker requires a client certificate: set mqtt.tls.cert and mqtt.tls.key');
      } finally {
        await without.bridge.stop();
      }
      const tls = { ca: '../pki/ca.pem', cert: '../pki/jupiter-client.pem', key: '../pki/jupiter-client.key' };
      const { sub, got } = await tlsSubscriber(strict.tlsUrl!, ['jupiter/#'], { cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey) });
      const withCert = await bridgeFor(configDir({ url: strict.tlsUrl, username: USER, password: PASSWORD, tls }));
      try {
        expect(withCert.bridge.mqtt?.connected).to.equal(true);
        await until('retained messages through the client-certificate broker', () => got.some((g) => g.includes('"mapper":"heft"')));
        expect(withCert.log).to.deep.equal([]);
      } finally {
        await withCert.bridge.stop();
        await sub.endAsync();
      }
    } finally {
      await strict.dispose();
    }
  });

  it('checks the TLS files when the configuration is loaded (file:line errors)', async () => {
    writeFileSync(join(tmp, 'pki', 'not-pem.pem'), 'just text\n');
    const cases: Array<[object, NodeJS.ProcessEnv, RegExp]> = [
      [{ url: broker.tlsUrl, tls: { ca: '../pki/missing.pem' } }, {}, /jupiter\.config\.json:5: mqtt\.tls\.ca: file not found: \.\.\/pki\/missing\.pem/],
      [{ url: broker.tlsUrl, tls: { ca: '../pki/not-pem.pem' } }, {}, /jupiter\.config\.json:5: mqtt\.tls\.ca: \.\.\/pki\/not-pem\.pem: not a PEM certificate/],
      [{ url: broker.tlsUrl, tls: { cert: '../pki/jupiter-client.pem', key: '../pki/localhost.key' } }, {}, /jupiter\.config\.json:6: mqtt\.tls\.key: the private key does not belong to the client certificate/],
      [{ url: broker.tlsUrl, tls: { cert: '../pki/jupiter-client.pem' } }, {}, /jupiter\.config\.json:5: mqtt\.tls\.cert is set but the client key is not/],
      [{ url: `mqtt://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:1883`, tls: { ca: '../pki/ca.pem' } }, {}, /jupiter\.config\.json:4: mqtt\.tls is set but the broker URL "mqtt:\/\/jupiter:\*\*\*@127\.0\.0\.1:1883" does not use TLS/],
      [{ tls: { ca: '../pki/ca.pem' } }, {}, /jupiter\.config\.json:3: mqtt\.tls is set but no external broker is/],
      [{ url: broker.tlsUrl }, { JUPITER_MQTT_CA: 'nowhere.pem' }, /^JUPITER_MQTT_CA: file not found: nowhere\.pem/],
      [{ url: broker.tlsUrl }, { JUPITER_MQTT_INSECURE: 'yes' }, /^JUPITER_MQTT_INSECURE must be 1 or 0/],
    ];
    for (const [section, env, re] of cases) {
      const dir = configDir(section);
      const err = await loadClusterConfig({ dir, env }).then(() => undefined, (e: unknown) => e);
      expect(isJupiterError(err), `${JSON.stringify(section)}: ${String(err)}`).to.equal(true);
      if (!isJupiterError(err)) continue;
      const text = err.format();
      seen.push(text);
      expect(err.exitCode).to.equal(2);
      expect(text, text).to.match(re);
      expect(text, text).to.match(/\n {2}hint: \S/);
    }
  });

  it('jupiter validate accepts a TLS configuration and reports a bad one with file:line, password masked', async () => {
    const good = configDir({ url: broker.tlsUrl, username: USER, tls: { ca: '../pki/ca.pem', cert: '../pki/jupiter-client.pem', key: '../pki/jupiter-client.key' } });
    const ok = await runCli(['validate', join(appsDir, 'dummy')], { cwd: good, env: { JUPITER_CONFIG: '', JUPITER_MQTT_URL: '', JUPITER_MQTT_PASSWORD: PASSWORD } });
    expect(ok.code, ok.stderr).to.equal(0);
    const bad = configDir({ url: `mqtts://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:8883`, tls: { ca: '../pki/other-ca.pem', rejectUnauthorized: 'no' } });
    const r = await runCli(['validate', join(appsDir, 'dummy')], { cwd: bad, env: { JUPITER_CONFIG: '', JUPITER_MQTT_URL: '' } });
    seen.push(r.stdout, r.stderr);
    expect(r.code, r.stderr).to.equal(2);
    expect(r.stderr).to.include('jupiter.config.json:6: mqtt.tls.rejectUnauthorized must be boolean');
  });

  it('never shows the password: in any log line or error above, or in a publisher given it in the URL', async () => {
    const log: string[] = [];
    const url = `mqtts://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${broker.tlsPort}`;
    const p = new MqttPublisher({ url, password: PASSWORD, reconnectMs: 100, log: (l) => log.push(l) }).start();
    try {
      await until('the warning', () => log.length > 0);
    } finally {
      await p.stop();
    }
    seen.push(...log, JSON.stringify(p.lastProblem ?? {}));
    expect(seen.length).to.be.at.least(10);
    for (const text of seen) {
      expect(text).to.not.include(PASSWORD);
      expect(text).to.not.include(encodeURIComponent(PASSWORD));
    }
  });
});
