/**
 * A test's HTTP receiver: `Bun.serve` on 127.0.0.1 at a port the system picks, never a
 * port shared with another process, answering with `fetch`.
 */
export function serveOnLoopback(
  fetch: (request: Request) => Response | Promise<Response>,
): ReturnType<typeof Bun.serve> {
  return Bun.serve({ hostname: '127.0.0.1', port: 0, reusePort: false, development: false, fetch });
}
