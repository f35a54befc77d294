import type { DoctorProbe } from '../../driver.ts';

/** SQLite's `PRAGMA integrity_check`: every page, index and constraint of the file. */
export const integrityProbe: DoctorProbe = {
  name: 'integrity_check',
  async run(x) {
    const { rows } = await x.query<{ integrity_check: string }>('PRAGMA integrity_check');
    const lines = rows.map((r) => r.integrity_check);
    if (lines.length === 1 && lines[0] === 'ok') return [];
    return [
      {
        check: 'integrity_check',
        severity: 'problem',
        message: `SQLite integrity_check: ${lines.slice(0, 5).join('; ')}${lines.length > 5 ? '; …' : ''}`,
      },
    ];
  },
};

/** SQLite's `PRAGMA foreign_key_check`: rows whose parent is missing. */
export const foreignKeyProbe: DoctorProbe = {
  name: 'foreign_key_check',
  async run(x) {
    const { rows } = await x.query<{ table: string; rowid: number; parent: string }>(
      'PRAGMA foreign_key_check',
    );
    if (rows.length === 0) return [];
    return [
      {
        check: 'foreign_key_check',
        severity: 'problem',
        message: `SQLite foreign_key_check: ${rows.length} row${rows.length === 1 ? '' : 's'} point at a missing parent (${rows
          .slice(0, 5)
          .map((r) => `${r.table} rowid ${r.rowid} → ${r.parent}`)
          .join(', ')})`,
      },
    ];
  },
};
