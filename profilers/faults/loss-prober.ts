// Packet-loss probing for failure localisation: every agent answers small UDP echo packets on
// its probe port (UDP and TCP port numbers are separate, so the registration's host:port serves
// both) and, every `intervalMs`, sends `count` numbered packets to every live peer and counts
// the echoes. HTTP transfer probes cannot see loss (TCP retransmits; a dead link only shows as
// a timeout a minute later); these packets can, and cost little: 64 bytes each way, 100 per
// 10 s = 1.3 KB/s per link, within the 2% budget of any link above 0.5 Mbit/s.
// Each round goes to the capped list `link:<from>:<to>:loss` ({sent, lost, at}); readers pool
// the recent rounds (rounds.ts) and localise the fault (localise.ts).
import { createSocket, type Socket } from 'node:dgram';
import type { Redis } from 'ioredis';
import type { Keys } from '../../config/redis-keys.js';
import type { AgentRegistration } from '../agent/registry.js';
import type { LossRound } from './rounds.js';

export interface LossOptions {
  /** Period of a round (ms). */
  intervalMs: number;
  /** Packets per peer per round. */
  count: number;
  /** Spacing of the packets to one peer (ms): a burst would measure queue overflow, not loss. */
  gapMs: number;
  /** How long to wait for late echoes after the last packet (ms). */
  waitMs: number;
  /** Rounds kept per directed link. */
  keep: number;
}

export const defaultLossOptions = (): LossOptions => ({ intervalMs: 10_000, count: 100, gapMs: 5, waitMs: 1000, keep: 30 });

const MAGIC = 0x4a4c5031; // "JLP1"
const PACKET = 64;
const ASK = 1;
const ECHO = 2;

type Log = (line: string) => void;

export class LossProber {
  private socket?: Socket;
  private timer?: NodeJS.Timeout;
  private peers: AgentRegistration[] = [];
  private nextId = 1;
  /** Round id -> sequence numbers echoed so far. */
  private readonly open = new Map<number, Set<number>>();
  private round?: Promise<void>;
  private running = false;
  readonly stats = { rounds: 0, sent: 0, echoed: 0 };

  constructor(
    private readonly redis: Redis,
    private readonly keys: Keys,
    private readonly node: string,
    private readonly opts: LossOptions,
    private readonly log: Log,
  ) {}

  /** Bind the echo socket; false (logged) when the port is taken, and the agent runs without loss probing. */
  async listen(host: string, port: number): Promise<boolean> {
    const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
    socket.on('message', (msg, rinfo) => this.onMessage(socket, msg, rinfo.address, rinfo.port));
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, host, () => {
          socket.off('error', reject);
          resolve();
        });
      });
    } catch (e) {
      socket.close();
      this.log(`loss probing off: cannot bind UDP ${host}:${port}: ${(e as Error).message}`);
      return false;
    }
    socket.on('error', (e) => this.log(`loss probe socket: ${e.message}`));
    this.socket = socket;
    return true;
  }

  start(): void {
    if (!this.socket) return;
    this.running = true;
    this.timer = setInterval(() => {
      if (!this.round) this.round = this.runRound().finally(() => (this.round = undefined));
    }, this.opts.intervalMs);
  }

  setPeers(regs: AgentRegistration[]): void {
    this.peers = regs.filter((r) => r.node !== this.node);
  }

  async stop(): Promise<void> {
    this.running = false;
    clearInterval(this.timer);
    await this.round;
    const socket = this.socket;
    this.socket = undefined;
    if (socket) await new Promise<void>((resolve) => socket.close(() => resolve()));
  }

  private onMessage(socket: Socket, msg: Buffer, address: string, port: number): void {
    if (msg.length < 13 || msg.readUInt32BE(0) !== MAGIC) return;
    const kind = msg.readUInt8(4);
    if (kind === ASK) {
      msg.writeUInt8(ECHO, 4);
      socket.send(msg, port, address);
      return;
    }
    if (kind === ECHO) this.open.get(msg.readUInt32BE(5))?.add(msg.readUInt32BE(9));
  }

  /** One round: `count` packets to every peer (interleaved), then the echoes counted. */
  private async runRound(): Promise<void> {
    const socket = this.socket;
    const peers = [...this.peers];
    if (!socket || peers.length === 0) return;
    const ids = peers.map(() => {
      const id = this.nextId++ >>> 0;
      this.open.set(id, new Set());
      return id;
    });
    const sendErrors = new Map<string, string>();
    for (let seq = 0; seq < this.opts.count && this.running; seq++) {
      peers.forEach((p, i) => {
        const buf = Buffer.alloc(PACKET);
        buf.writeUInt32BE(MAGIC, 0);
        buf.writeUInt8(ASK, 4);
        buf.writeUInt32BE(ids[i]!, 5);
        buf.writeUInt32BE(seq, 9);
        socket.send(buf, p.port, p.host, (e) => e && sendErrors.set(p.node, e.message));
      });
      await new Promise((r) => setTimeout(r, this.opts.gapMs));
    }
    if (!this.running) return;
    await new Promise((r) => setTimeout(r, this.opts.waitMs));
    // Unreachable peers count as loss; say why once per round, not once per packet.
    for (const [peer, msg] of sendErrors) this.log(`loss probes to ${peer} not sent: ${msg}`);
    const at = Date.now();
    const pipe = this.redis.pipeline();
    peers.forEach((p, i) => {
      const echoed = this.open.get(ids[i]!)?.size ?? 0;
      this.open.delete(ids[i]!);
      const round: LossRound = { sent: this.opts.count, lost: this.opts.count - echoed, at };
      this.stats.sent += round.sent;
      this.stats.echoed += echoed;
      const key = this.keys.linkLoss(this.node, p.node);
      pipe.lpush(key, JSON.stringify(round)).ltrim(key, 0, this.opts.keep - 1);
    });
    this.stats.rounds++;
    try {
      await pipe.exec();
    } catch (e) {
      this.log(`loss rounds not stored: ${(e as Error).message}`);
    }
  }
}
