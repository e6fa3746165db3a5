// `jupiter viz` as a user runs it: bad input exits 2; with a Redis it serves the page,
// /config.json (without any broker address), the /live WebSocket fed from an embedded broker,
// /metrics, and stops on SIGTERM.
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../support/cli.js';
import { cliPath } from '../support/paths.js';
import { startTestRedis, type TestRedis } from '../support/redis.js';

describe('jupiter viz', function () {
  this.timeout(30_000);
  let redis: TestRedis;
  let cwd: string;

  before(async () => {
    redis = await startTestRedis();
    cwd = mkdtempSync(join(tmpdir(), 'jupiter-viz-'));
  });

  after(async () => {
    await redis?.stop();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('rejects a bad port and a bad app name with exit 2', async () => {
    const port = await runCli(['viz', '--port', 'eighty'], { cwd });
    expect(port.code).to.equal(2);
    expect(port.stderr).to.match(/--port eighty is not a port number/).and.to.match(/hint:/);
    const app = await runCli(['viz', '--app', '../x'], { cwd });
    expect(app.code).to.equal(2);
  });

  it('serves the dashboard, config, the live feed and metrics until SIGTERM', async () => {
    const child = spawn(process.execPath, [cliPath, 'viz', '--port', '0', '--app', 'camera'], {
      cwd, env: { ...process.env, JUPITER_REDIS_URL: redis.url }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      const deadline = Date.now() + 15_000;
      while (!/Dashboard: (\S+)/.test(out)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`viz did not start: ${out}${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const url = new URL(/Dashboard: (\S+)/.exec(out)![1]!);
      expect(url.searchParams.get('app')).to.equal('camera');
      const page = await fetch(new URL('/', url));
      expect(page.status).to.equal(200);
      expect(await page.text()).to.include('<svg id="dag"');
      // the page no longer loads mqtt.js: it never talks to a broker
      expect((await fetch(new URL('/vendor/mqtt.esm.js', url))).status).to.equal(404);
      const cfg = (await (await fetch(new URL('/config.json', url))).json()) as Record<string, unknown>;
      expect(cfg).to.deep.equal({ app: 'camera', apps: [] });
      // /live reports the embedded broker connected
      const ws = new WebSocket(new URL('/live?app=camera', url.href.replace(/^http/, 'ws')));
      const brokerUp = await new Promise<boolean>((resolve, reject) => {
        ws.on('message', (d: Buffer) => {
          for (const e of JSON.parse(d.toString()) as Array<{ status?: { broker: boolean } }>) if (e.status?.broker) resolve(true);
        });
        ws.once('error', reject);
        setTimeout(() => resolve(false), 10_000);
      });
      ws.close();
      expect(brokerUp).to.equal(true);
      expect((await fetch(new URL('/metrics', url))).status).to.equal(200);
      expect((await fetch(new URL('/static/../package.json', url))).status).to.equal(404);
      expect(err).to.match(/MQTT embedded mqtt:\/\//);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).to.equal(0);
  });
});
