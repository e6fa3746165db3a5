// BullMQ and ioredis, loaded with require(). Both are CommonJS packages: imported from ESM, Node
// parses every file of theirs to find the named exports, which costs each runner process about
// 85 ms of CPU at start (a third of its start-up), and deploy starts all runners at once. Every
// module of ours takes these values from here; types still come from the packages themselves.
import { createRequire } from 'node:module';
import type * as BullMQ from 'bullmq';
import type * as IORedis from 'ioredis';

const require = createRequire(import.meta.url);
const bullmq = require('bullmq') as typeof BullMQ;
const ioredis = require('ioredis') as typeof IORedis;

export const { Job, Queue, Worker, UnrecoverableError, WaitingError } = bullmq;
/** The installed BullMQ's version (its script names carry it; transport.ts addTo names it in errors). */
export const BULLMQ_VERSION = (require('bullmq/package.json') as { version: string }).version;
export type Queue<D = unknown> = BullMQ.Queue<D>;
export type Worker<D = unknown> = BullMQ.Worker<D>;
export type UnrecoverableError = BullMQ.UnrecoverableError;
export type Job<D = unknown> = BullMQ.Job<D>;
export type { JobsOptions } from 'bullmq';

export const { Redis } = ioredis;
export type Redis = IORedis.Redis;
