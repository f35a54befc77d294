/**
 * `2026-11-30 09:12:03`: a Unix time (seconds) in this machine's local time zone, the
 * one way onceq writes a time for people (CLI lines, error messages, the console).
 * Machine-readable output keeps the epoch seconds.
 */
export function localTime(epochSeconds: number): string {
  const d = new Date(epochSeconds * 1000);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}
