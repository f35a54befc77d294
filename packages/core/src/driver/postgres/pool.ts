import type pg from 'pg';
import type { ConnectionUse } from '../backend.ts';
import { ClosingClient } from './closing-client.ts';
import { type Waiter, Waiters } from './pool-waiters.ts';
import { refusalPauseMs } from './refusal-pause.ts';

export interface ConnectionPoolOptions {
  /** node-postgres' settings for one connection. */
  config: pg.ClientConfig;
  max: number;
  /** How long a caller waits for a connection to come free (or to open), ms. */
  waitMs: number;
  /** How long a connection beyond the first stays open unused, ms. */
  idleMs: number;
}

/** The LISTEN the pool keeps on one of its connections (see {@link ConnectionPool.listen}). */
interface Listening {
  channel: string;
  onNotification(payload: string | undefined): void;
  /** The listening connection was lost: nothing is heard until one is back. */
  onLost(): void;
  /** LISTEN runs again on another connection (after {@link onLost}). */
  onBack(): void;
}

/** node-postgres clients can let the process exit while their socket is open. */
interface Refable {
  ref?(): void;
  unref?(): void;
}

/**
 * The store's connections to PostgreSQL: node-postgres clients, opened on demand up to
 * `max`, handed out one caller at a time. Unlike `pg.Pool` it degrades instead of
 * failing when the server refuses a connection:
 *
 * - **A refused growth never fails the caller** while the pool holds a connection: the
 *   caller waits for one of those, growth pauses for a while (longer after each refusal,
 *   reset by a success), and {@link onShort} hears of it. Only a pool that holds nothing
 *   reports the refusal to its caller.
 * - **Urgent callers go first** (lease extensions, give-backs): they wait ahead of every
 *   other caller ({@link Waiters}).
 * - **The first connection stays**: connections beyond one close after `idleMs` unused,
 *   the last one never does, so an idle process holds exactly one.
 * - **LISTEN rides on a pooled connection** ({@link listen}): one connection also
 *   listens, while it is lent out and while it is idle; notifications arrive between
 *   its queries. When it is lost, the next connection the pool gets back listens again.
 */
export class ConnectionPool {
  /** Most connections; the worker sets it from its concurrency unless `?pool_max=` did. */
  max: number;
  /** node-postgres' settings (Kysely reads them to open a connection that cancels a query). */
  readonly options: pg.ClientConfig;
  readonly #idleMs: number;
  readonly #all = new Set<pg.Client>();
  readonly #idle: pg.Client[] = [];
  readonly #lent = new Set<pg.Client>();
  readonly #broken = new WeakSet<pg.Client>();
  readonly #idleTimers = new Map<pg.Client, ReturnType<typeof setTimeout>>();
  readonly #waiters: Waiters;
  readonly #connected: ((client: pg.Client) => void)[] = [];
  readonly #short: ((use: ConnectionUse) => void)[] = [];
  #opening = 0;
  #refused = 0;
  #pauses = 0;
  #pausedUntil = 0;
  #pauseTimer: ReturnType<typeof setTimeout> | undefined;
  #ended = false;
  #listening: Listening | undefined;
  #listener: pg.Client | undefined;

  constructor(options: ConnectionPoolOptions) {
    this.options = options.config;
    this.max = options.max;
    this.#waiters = new Waiters(options.waitMs);
    this.#idleMs = options.idleMs;
  }

  /** Calls `fn` with every connection the pool opens, before anyone queries it. */
  whenConnected(fn: (client: pg.Client) => void): void {
    this.#connected.push(fn);
  }

  /** Calls `fn` each time a refused connection makes the pool work with what it holds. */
  onShort(fn: (use: ConnectionUse) => void): void {
    this.#short.push(fn);
  }

  use(): ConnectionUse {
    return {
      held: this.#all.size,
      max: this.max,
      refused: this.#refused,
      short: this.#all.size < this.max && performance.now() < this.#pausedUntil,
    };
  }

  /** True when a caller would get a connection now without waiting for one to come back. */
  spare(): boolean {
    return this.#idle.length > 0 || this.#mayOpen();
  }

  /**
   * A connection for one caller, who must `release()` it. `urgent` callers are served
   * before every other waiting caller.
   */
  async connect(urgent = false): Promise<pg.PoolClient> {
    if (this.#ended) throw new Error('the connection pool is closed');
    const idle = this.#takeIdle();
    if (idle !== undefined) return this.#lend(idle);
    if (this.#mayOpen()) {
      try {
        return this.#lend(await this.#open());
      } catch (error) {
        // Refused while holding connections: wait for one of ours instead.
        if (this.#all.size === 0) throw error;
      }
    }
    return this.#waiters.wait(urgent);
  }

  /** One statement on a pooled connection. */
  async query(text: string, values?: unknown[]): Promise<pg.QueryResult> {
    const client = await this.connect();
    try {
      return await client.query(text, values);
    } finally {
      client.release();
    }
  }

  /**
   * LISTENs on `listening.channel` on one pooled connection (opening one if none is open)
   * and keeps it listening: a lost listening connection is reported through `onLost`,
   * and the next connection released to the pool LISTENs again (`onBack`). Rejects when
   * LISTEN itself fails.
   */
  async listen(listening: Listening): Promise<void> {
    this.#listening = listening;
    const client = await this.connect();
    try {
      await client.query(`LISTEN ${listening.channel}`);
      this.#listener = client;
    } finally {
      client.release();
    }
  }

  /** Stops dispatching notifications (the connection keeps its LISTEN until it closes). */
  unlisten(): void {
    this.#listening = undefined;
    this.#listener = undefined;
  }

  /** True while a connection of this pool listens. */
  listening(): boolean {
    return this.#listening !== undefined && this.#listener !== undefined;
  }

  async end(): Promise<void> {
    this.#ended = true;
    clearTimeout(this.#pauseTimer);
    this.#waiters.failAll(new Error('the connection pool is closed'));
    const idle = this.#idle.splice(0);
    await Promise.all(idle.map((client) => this.#drop(client)));
  }

  #mayOpen(): boolean {
    if (this.#all.size + this.#opening >= this.max) return false;
    return this.#all.size === 0 || performance.now() >= this.#pausedUntil;
  }

  #takeIdle(): pg.Client | undefined {
    const client = this.#idle.pop();
    if (client !== undefined) {
      clearTimeout(this.#idleTimers.get(client));
      this.#idleTimers.delete(client);
      (client as Refable).ref?.();
    }
    return client;
  }

  async #open(): Promise<pg.Client> {
    this.#opening++;
    const client = new ClosingClient(this.options);
    const lose = () => this.#lose(client);
    client.on('error', lose);
    client.on('end', lose);
    client.on('notification', (message) => {
      if (client === this.#listener && message.channel === this.#listening?.channel) {
        this.#listening.onNotification(message.payload);
      }
    });
    for (const fn of this.#connected) fn(client);
    try {
      await client.connect();
    } catch (error) {
      this.#opening--;
      this.#broken.add(client);
      client.end().catch(() => {});
      this.#refusedOne(error);
      throw error;
    }
    this.#opening--;
    if (this.#ended) {
      await this.#drop(client).catch(() => {});
      throw new Error('the connection pool is closed');
    }
    this.#pauses = 0;
    this.#all.add(client);
    return client;
  }

  /** A refused connection: pause growth, tell who listens, and fail waiters if nothing is held. */
  #refusedOne(error: unknown): void {
    this.#refused++;
    if (this.#all.size === 0) {
      if (this.#opening === 0) {
        this.#waiters.failAll(error);
      }
      return;
    }
    const pause = refusalPauseMs(this.#pauses);
    this.#pauses++;
    this.#pausedUntil = performance.now() + pause;
    clearTimeout(this.#pauseTimer);
    // When the pause ends, a caller still waiting may grow the pool again.
    this.#pauseTimer = setTimeout(() => this.#serve(), pause);
    this.#pauseTimer.unref?.();
    const use = this.use();
    for (const fn of this.#short) fn(use);
  }

  /** Hands idle connections to waiting callers, and opens one for the first when it may. */
  #serve(): void {
    while (this.#waiters.length > 0 && this.#idle.length > 0) {
      const waiter = this.#waiters.next() as Waiter;
      waiter.resolve(this.#lend(this.#takeIdle() as pg.Client));
    }
    if (this.#waiters.length === 0 || !this.#mayOpen() || this.#ended) return;
    const waiter = this.#waiters.next() as Waiter;
    this.#open().then(
      (client) => {
        // Timed out while the connection opened: the pool keeps it.
        if (waiter.settled) this.#giveBack(client, false);
        else waiter.resolve(this.#lend(client));
      },
      (error: unknown) => {
        if (waiter.settled) return;
        if (this.#all.size === 0) waiter.reject(error);
        else this.#waiters.putBack(waiter);
      },
    );
  }

  #lend(client: pg.Client): pg.PoolClient {
    this.#lent.add(client);
    const lent = client as pg.PoolClient;
    let released = false;
    lent.release = (error?: Error | boolean) => {
      if (released) return;
      released = true;
      this.#lent.delete(client);
      this.#giveBack(client, error !== undefined && error !== false);
    };
    return lent;
  }

  #giveBack(client: pg.Client, discard: boolean): void {
    if (discard || this.#ended || this.#broken.has(client)) {
      this.#drop(client).catch(() => {});
      this.#serve();
      return;
    }
    const waiter = this.#waiters.next();
    if (waiter !== undefined) {
      waiter.resolve(this.#lend(client));
      return;
    }
    const listening = this.#listening;
    if (listening !== undefined && this.#listener === undefined) {
      // The listening connection was lost: this one listens from now on.
      this.#listener = client;
      this.#lent.add(client);
      client.query(`LISTEN ${listening.channel}`).then(
        () => {
          this.#lent.delete(client);
          if (this.#listening === listening) listening.onBack();
          this.#giveBack(client, false);
        },
        () => {
          this.#lent.delete(client);
          if (this.#listener === client) this.#listener = undefined;
          this.#giveBack(client, true);
        },
      );
      return;
    }
    this.#idle.push(client);
    // An idle connection never keeps the process alive (a store that is never closed).
    (client as Refable).unref?.();
    const timer = setTimeout(() => {
      this.#idleTimers.delete(client);
      // The listening connection and the last one stay.
      if (client === this.#listener || this.#all.size <= 1) return;
      const at = this.#idle.indexOf(client);
      if (at < 0) return;
      this.#idle.splice(at, 1);
      this.#drop(client).catch(() => {});
    }, this.#idleMs);
    timer.unref?.();
    this.#idleTimers.set(client, timer);
  }

  /** A connection that broke or closed: never lent again; a listening one is reported. */
  #lose(client: pg.Client): void {
    if (this.#broken.has(client)) return;
    this.#broken.add(client);
    this.#all.delete(client);
    const at = this.#idle.indexOf(client);
    if (at >= 0) {
      this.#idle.splice(at, 1);
      clearTimeout(this.#idleTimers.get(client));
      this.#idleTimers.delete(client);
    }
    if (client === this.#listener) {
      this.#listener = undefined;
      if (!this.#ended) this.#listening?.onLost();
    }
  }

  async #drop(client: pg.Client): Promise<void> {
    this.#lose(client);
    await client.end();
  }
}
