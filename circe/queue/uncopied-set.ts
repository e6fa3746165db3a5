// SET of a large value without ioredis's copy of it. ioredis turns a command with a Buffer argument
// into one new buffer holding the whole command (Command.toWritable), so every 1 MiB output a runner
// or the source sends cost a fresh MiB, a copy into it, and external memory that brings V8's next
// full GC closer. This command hands the value itself to the socket: ioredis writes what
// toWritable(socket) returns to that same socket right after the call (sent now or from its
// offline queue once connected, and again after a reconnect), so writing the parts before it
// keeps the command whole and in order. Only for commands sent alone (sendCommand), never inside
// a pipeline, which collects what toWritable returns. test/circe/uncopied-set.test.ts holds
// ioredis to that contract on a real Redis.
import { createRequire } from 'node:module';
import type * as IORedis from 'ioredis';
import type { Redis } from 'ioredis';

const require = createRequire(import.meta.url);
const { Command } = require('ioredis') as typeof IORedis;

/** Values at least this large go to the socket as they are; smaller ones are SET as usual (one copy costs less than two more writes). */
export const UNCOPIED_MIN_BYTES = 64 * 1024;

interface Writable {
  write(chunk: string | Buffer): boolean;
}

class UncopiedCommand extends Command {
  override toWritable(socket: Writable): string | Buffer {
    let head = `*${this.args.length + 1}\r\n$${Buffer.byteLength(this.name)}\r\n${this.name}\r\n`;
    for (const arg of this.args) {
      if (Buffer.isBuffer(arg)) {
        socket.write(`${head}$${arg.length}\r\n`);
        socket.write(arg);
        head = '\r\n';
      } else {
        const s = String(arg);
        head += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
      }
    }
    return head;
  }
}

/** SET key value [EX ttlSec], the value passed to the socket uncopied when it is large. */
export function uncopiedSet(redis: Redis, key: string, value: Buffer, ttlSec?: number): Promise<unknown> {
  if (value.length < UNCOPIED_MIN_BYTES) return ttlSec ? redis.set(key, value, 'EX', ttlSec) : redis.set(key, value);
  const args = ttlSec ? [key, value, 'EX', String(ttlSec)] : [key, value];
  const cmd = new UncopiedCommand('set', args, { replyEncoding: 'utf8', keyPrefix: redis.options.keyPrefix } as ConstructorParameters<typeof Command>[2]);
  return redis.sendCommand(cmd) as Promise<unknown>;
}
