/**
 * HTTP requests written byte for byte on a socket: a Host header `fetch` would rewrite
 * or refuse (a rebinding name, `127.0.0.1@evil.example`, none at all with HTTP/1.0),
 * and a chosen source address on the loopback network (another "client").
 */
import { connect } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends `head` (request line and headers, without the blank line) and `body`; reads to close. */
export function rawRequest(
  port: number,
  head: string,
  body = '',
  localAddress = '127.0.0.1',
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => {
      const length = body === '' ? '' : `Content-Length: ${Buffer.byteLength(body)}\r\n`;
      socket.write(`${head}\r\n${length}Connection: close\r\n\r\n${body}`);
    });
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      const lines = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      resolve({
        status: Number(lines[0]?.split(' ')[1]),
        headers,
        body: text.slice(split + 4),
      });
    });
  });
}

/** A GET of `path` with exactly `host` as the Host header (null: no Host, HTTP/1.0). */
export function getWithHost(
  port: number,
  path: string,
  host: string | null,
  extra: string[] = [],
): Promise<RawAnswer> {
  const head =
    host === null
      ? [`GET ${path} HTTP/1.0`, ...extra]
      : [`GET ${path} HTTP/1.1`, `Host: ${host}`, ...extra];
  return rawRequest(port, head.join('\r\n'));
}
