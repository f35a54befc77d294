/**
 * How every onceq listener binds its port: alone. `Bun.serve` otherwise sets
 * `SO_REUSEPORT` on a port it is given, so a second console or metrics endpoint on a
 * port already in use starts without a word and the kernel spreads requests and scrapes
 * over both processes.
 */
import { OnceqError } from './errors.ts';

/** The port is held by another process, or the address cannot be bound. Exit code 2. */
export class ListenRefusedError extends OnceqError {
  constructor(message: string, options?: ErrorOptions) {
    super('listen_refused', 2, message, options);
  }
}

/** What {@link listenAlone} binds: `Bun.serve`'s options with an explicit address. */
export type ListenOptions = Bun.Serve.Options<undefined, never> & {
  hostname: string;
  port: number;
};

/**
 * `Bun.serve(options)` with `reusePort: false`, so a port another process holds is
 * refused instead of shared. `portFlag` is the option the operator chooses the port
 * with (`--port`, `--metrics-port`), named in the refusal.
 *
 * @throws ListenRefusedError one sentence: `port 7373 on 127.0.0.1 is in use by another
 * process; choose another with --port`, or why the address cannot be bound.
 */
export function listenAlone(options: ListenOptions, portFlag: string): Bun.Server<undefined> {
  try {
    return Bun.serve({ ...options, reusePort: false });
  } catch (error) {
    const { hostname, port } = options;
    if ((error as { code?: string }).code === 'EADDRINUSE') {
      throw new ListenRefusedError(
        `port ${port} on ${hostname} is in use by another process; choose another with ${portFlag}`,
        { cause: error },
      );
    }
    throw new ListenRefusedError(
      `cannot listen on port ${port} on ${hostname} (${(error as Error).message}); choose another address or ${portFlag}`,
      { cause: error },
    );
  }
}
