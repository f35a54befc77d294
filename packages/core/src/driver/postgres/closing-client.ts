import pg from 'pg';

type ConnectCallback = ((err: Error) => void) | ((err: null, client: pg.Client) => void);

/**
 * A node-postgres client that closes its socket when connecting fails. When the server
 * asks for a SCRAM password the URL does not have, node-postgres fails the connect but
 * leaves the socket open, and pg-pool drops such a client without ending it: the server
 * then holds the half-authenticated connection until its `authentication_timeout` (a
 * minute by default) and the process cannot exit before. Every client onceq makes,
 * pooled or not, is one of these.
 */
export class ClosingClient extends pg.Client {
  override connect(): Promise<pg.Client>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.Client> | undefined {
    if (callback === undefined) {
      return super.connect().catch((error: unknown) => {
        this.#close();
        throw error;
      });
    }
    const reply = callback as (error: Error | null, client?: pg.Client) => void;
    super.connect(((error: Error | null, client?: pg.Client) => {
      if (error) this.#close();
      reply(error, client);
    }) as ConnectCallback);
    return undefined;
  }

  #close(): void {
    (
      this as unknown as { connection?: { stream?: { destroy(): void } } }
    ).connection?.stream?.destroy();
  }
}
