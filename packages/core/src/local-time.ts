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

/**
 * A length of time for people: `45 s`, `5 min`, `3 h`, `4 d` (seconds below two
 * minutes, minutes below two hours, hours below two days, rounded). The one way onceq
 * writes an age or a delay (CLI lines, the console).
 */
export function duration(seconds: number): string {
  const a = Math.abs(Math.round(seconds));
  if (a < 120) return `${a} s`;
  if (a < 7200) return `${Math.round(a / 60)} min`;
  if (a < 172_800) return `${Math.round(a / 3600)} h`;
  return `${Math.round(a / 86_400)} d`;
}

/** `at` relative to `now` (both Unix seconds): `in 30 s`, `5 min ago`, `now`. */
export function relativeTime(at: number, now: number): string {
  const delta = at - now;
  if (delta === 0) return 'now';
  return delta > 0 ? `in ${duration(delta)}` : `${duration(delta)} ago`;
}
