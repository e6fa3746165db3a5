// Fault 5: the MQTT broker dies mid-stream. The deployment uses an external mosquitto (with a user
// name and password, from JUPITER_MQTT_URL / _USERNAME / _PASSWORD); it is stopped while items
// stream: every output still arrives (telemetry is a side channel), the hub says so once, and when
// the broker is back the hub reconnects and telemetry flows again. The MQTT password never
// appears in any log or CLI output.
import { expect } from 'chai';
import { join } from 'node:path';
import mqtt from 'mqtt';
import type { Redis } from 'ioredis';
import { connectRedis } from '../../circe/queue/connection.js';
import { waitForItems } from '../../circe/home/wait.js';
import { haveMosquitto, startMosquitto, type TestMosquitto } from '../support/mosquitto.js';
import { CliSandbox, countDeliveries, printCounts, sleep, until, writeChainApp, writeItems } from '../support/faults.js';

const APP = 'mqttdown';
const PREFIX = 'jupiter:';
const N = 300;
const USER = 'jupiter-hub';
const SECRET = 'mqtt-S3cret-4f9d1c';

describe('fault: the MQTT broker dies mid-stream (external mosquitto with credentials)', function () {
  this.timeout(120_000);
  let broker: TestMosquitto | undefined;
  let box: CliSandbox | undefined;
  let redis: Redis | undefined;

  before(async function () {
    if (!haveMosquitto()) {
      console.log('      skipped: mosquitto is not installed (apt-get install mosquitto)');
      this.skip();
    }
    broker = await startMosquitto({ username: USER, password: SECRET });
    box = new CliSandbox('jupiter-mqttdown-', { JUPITER_MQTT_URL: broker.tcpUrl, JUPITER_MQTT_USERNAME: USER, JUPITER_MQTT_PASSWORD: SECRET });
  });
  after(async () => {
    redis?.disconnect();
    await box?.dispose(APP);
    await broker?.dispose();
  });

  it('delivers every output while the broker is down; telemetry resumes when it is back', async () => {
    const b = box!;
    const appDir = writeChainApp(b.cwd, APP, { tasks: 3, sleepMs: 5 });
    const files = writeItems(join(b.cwd, 'in'), N, 'm');
    const dep = JSON.parse((await b.ok(['deploy', appDir, '--runtime', 'process', '--wait', '--json'], { timeoutMs: 120_000 })).stdout) as { deployment: { outputDir: string } };
    redis = connectRedis(b.stack().redis!.url);

    // Telemetry reaches the external broker before the fault.
    let messages = 0;
    const sub = await mqtt.connectAsync(broker!.tcpUrl, { username: USER, password: SECRET, reconnectPeriod: 200 });
    sub.on('message', () => messages++);
    await sub.subscribeAsync('jupiter/#');
    await b.ok(['submit', APP, ...files]);
    const delivered = async (): Promise<number> => Number(await redis!.hget(`${PREFIX}app:${APP}:stats`, 'delivered'));
    await until(async () => (await delivered()) >= 50 && messages > 0, 60_000, 'items and telemetry to flow');
    const atStop = await delivered();
    const before = messages;
    await broker!.stop();
    const stoppedAt = Date.now();

    const items = files.map((f) => f.split('/').pop()!.replace('.txt', ''));
    await waitForItems(redis, PREFIX, APP, items, { timeoutMs: 90_000 });
    const whileDown = (Date.now() - stoppedAt) / 1000;
    const c = await countDeliveries(redis, PREFIX, APP, dep.deployment.outputDir, items.map((i) => `${i}_t2.txt`), ['0s_t2.txt']);

    // Back up: the hub reconnects and publishes again (the subscriber reconnects on its own).
    await broker!.start();
    const hubLog = (): string => b.logs().find((l) => l.file.endsWith('hub.log'))?.text ?? '';
    await until(() => /is back; resending/.test(hubLog()), 30_000, 'the hub to reconnect to the broker', 200);
    const resumedFrom = messages;
    await b.ok(['submit', APP, writeItems(join(b.cwd, 'more'), 1, 'after')[0]!, '--wait']);
    await until(() => messages > resumedFrom, 15_000, 'telemetry to flow again');
    await sub.endAsync();
    await sleep(100);

    console.log(`      broker stopped after ${atStop} deliveries and ${before} telemetry messages; the remaining ${N - atStop} items finished ${whileDown.toFixed(1)} s later with no broker; telemetry resumed after the restart`);
    printCounts(c);
    expect(c.missing).to.deep.equal([]);
    expect(c.lost).to.equal(0);
    expect(c.extraFiles).to.equal(0);
    expect(c.sinkDelivered).to.equal(N + 1);
    expect(atStop).to.be.lessThan(N);
    expect(hubLog()).to.match(/MQTT broker mqtt:\/\/127\.0\.0\.1:\d+ unreachable .*the pipeline is not affected/);
    // Credentials never logged or printed.
    for (const l of b.logs()) expect(l.text, l.file).to.not.include(SECRET);
    for (const r of b.transcript) expect(r.stdout + r.stderr).to.not.include(SECRET);
  });
});
