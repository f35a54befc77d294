/** What a finished child process left: its exit code and everything it printed. */
export interface ProcessResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cmd` to completion and collects both output streams. The environment is passed
 * explicitly (Bun.spawn without `env` ignores later changes to process.env).
 */
export async function runProcess(
  cmd: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; stdin?: Uint8Array } = {},
): Promise<ProcessResult> {
  const proc = Bun.spawn(cmd, {
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    env: options.env ?? { ...process.env },
    stdin: options.stdin ?? 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  return { code, stdout, stderr };
}
