// The embedded broker takes no anonymous clients: `jupiter stack up` generates a login, keeps it
// in stack.json (0600, like the Redis password), and only clients with it get in (real mqtt.js
// clients, and mosquitto_sub when it is installed). The hub's own bridge and dashboard use the
// login (deploy-cli.test.ts reads the hub's retained topics with it).
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import mqtt from 'mqtt';
import { WebSocket } from 'ws';
import { cliPath } from '../support/paths.js';
import { WorkDir } from './workdir.js';

/** Whether a dashboard's /live socket reports its broker feed connected (within 10 s). */
function brokerConnected(httpUrl: string): Promise<boolean> {
  const ws = new WebSocket(new URL('/live', httpUrl.replace(/^http/, 'ws')));
  return new Promise<boolean>((resolve) => {
    const done = (v: boolean): void => {
      ws.close();
      resolve(v);
    };
    ws.on('message', (d: Buffer) => {
      for (const e of JSON.parse(d.toString()) as Array<{ status?: { broker: boolean } }>) if (e.status?.broker) done(true);
    });
    ws.once('error', () => done(false));
    setTimeout(() => done(false), 10_000);
  });
}

function onPath(bin: string): Promise<boolean> {
  return new Promise((resolve) => execFile('sh', ['-c', `command -v ${bin}`], (e) => resolve(!e)));
}

async function refusal(url: string, opts: mqtt.IClientOptions): Promise<string> {
  try {
    const c = await mqtt.connectAsync(url, { reconnectPeriod: 0, connectTimeout: 5000, ...opts });
    await c.endAsync();
    return 'accepted';
  } catch (e) {
    return (e as Error).message;
  }
}

describe('e2e: the embedded MQTT broker requires the stack\'s login', function () {
  this.timeout(60_000);
  const w = new WorkDir();
  after(() => w.dispose());

  it('stack up generates a login in stack.json (0600); anonymous and wrong logins are refused, the right one gets in', async () => {
    const up = await w.expectCli(['stack', 'up']);
    const hub = w.stack().hub!;
    expect(hub.mqttUsername).to.equal('jupiter');
    expect(hub.mqttPassword).to.match(/^[0-9a-f]{36}$/);
    expect(statSync(join(w.stateDir, 'stack.json')).mode & 0o777).to.equal(0o600);
    expect(up.stdout).to.include('password in').and.not.include(hub.mqttPassword!);
    // the password stays out of the hub's argument list
    expect(await new Promise<string>((r) => execFile('ps', ['-o', 'args=', '-p', String(hub.pid)], (_e, out) => r(out)))).not.to.include(hub.mqttPassword!);

    expect(await refusal(hub.mqttUrl, {})).to.match(/Bad username or password|Not authorized/i);
    expect(await refusal(hub.mqttUrl, { username: 'jupiter', password: 'guess' })).to.match(/Bad username or password|Not authorized/i);
    expect(await refusal(hub.mqttWsUrl, {})).to.match(/Bad username or password|Not authorized/i);
    const c = await mqtt.connectAsync(hub.mqttUrl, { reconnectPeriod: 0, connectTimeout: 5000, username: hub.mqttUsername, password: hub.mqttPassword });
    try {
      const got = new Promise<string>((r) => c.once('message', (_t, p) => r(p.toString())));
      await c.subscribeAsync('jupiter/login-test');
      await c.publishAsync('jupiter/login-test', 'hello');
      expect(await got).to.equal('hello');
    } finally {
      await c.endAsync();
    }

    if (await onPath('mosquitto_sub')) {
      const port = new URL(hub.mqttUrl).port;
      const anon = await new Promise<{ code: number; out: string }>((r) => execFile('mosquitto_sub', ['-h', '127.0.0.1', '-p', port, '-t', 'jupiter/#', '-C', '1', '-W', '3'], (e, so, se) => r({ code: (e as { code?: number } | null)?.code ?? 0, out: `${so}${se}` })));
      expect(anon.code, anon.out).to.not.equal(0);
      expect(anon.out).to.match(/not authori[sz]ed|bad user name|refused/i);
    }
    // The hub's dashboard and `jupiter viz` subscribe with the login.
    expect(await brokerConnected(hub.httpUrl), 'hub dashboard feed').to.equal(true);
    const viz = spawn(process.execPath, [cliPath, 'viz', '--port', '0'], { cwd: w.dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    viz.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<void>((r) => viz.once('exit', () => r()));
    try {
      for (let i = 0; i < 300 && !/Dashboard: (\S+)/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
      expect(await brokerConnected(/Dashboard: (\S+)/.exec(out)![1]!), 'viz feed').to.equal(true);
    } finally {
      viz.kill('SIGTERM');
      await exited;
    }
    await w.expectCli(['stack', 'down']);
  });
});
