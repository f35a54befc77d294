/**
 * `bun run pack [OUTDIR]`: the public packages, `@onceq/core` and `@onceq/handler`, built
 * as installable packages and packed as tarballs (default dist/packages/).
 *
 * Each package is built under dist/build/<name>/: JavaScript by `bun build` (one file per
 * entry, shared chunks, dependencies left external, linked source maps holding the
 * sources), declarations by `tsc --emitDeclarationOnly` (`@internal` members stripped,
 * relative `.ts` specifiers rewritten to `.js`), a package.json
 * whose `exports` point at dist/ (the workspace's own point at src/), LICENSE, a short
 * README and CHANGELOG.md when the repository has one. Then `bun pm pack` writes the
 * tarball. docs/packages.md says how to publish them.
 */
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = resolve(import.meta.dir, '..');
const OUT = resolve(process.argv[2] ?? join(ROOT, 'dist', 'packages'));
/** Build folders sit beside the tarballs' folder: dist/build/ by default. */
const BUILD = join(dirname(OUT), 'build');
const TSC = join(ROOT, 'node_modules', '.bin', 'tsc');

interface PublicPackage {
  /** Workspace folder. */
  dir: string;
  /** Subpath → entry file under src/ (without `.ts`). */
  entries: Record<string, string>;
  /** One paragraph for the package README. */
  about: string;
}

const PACKAGES: readonly PublicPackage[] = [
  {
    dir: 'packages/core',
    entries: {
      '.': 'index',
      './postgres': 'postgres',
      './metrics': 'metrics',
      './service': 'service',
      './admin': 'admin',
      './testing': 'testing',
      './webhooks': 'webhooks',
    },
    about:
      'The onceq queue: enqueue, claim, apply/fail, redrive, the Worker, the handler contract and its failures. Subpaths: `@onceq/core/postgres` (needs `pg`), `@onceq/core/metrics` (needs `prom-client`), `@onceq/core/service` (the worker log and two-stage shutdown on signals), `@onceq/core/admin` (doctor, backup, prune, message listings, the queue figures), `@onceq/core/webhooks` (the outbox sender, delivery listings, the ingest handler), `@onceq/core/testing` (crash points, old-schema stores; tests only). Runs on Bun (it uses `bun:sqlite`).',
  },
  {
    dir: 'packages/handler',
    entries: { '.': 'index' },
    about:
      "The onceq lesson's category rules, versioned v1/v2 (book, pen, bag; v2 adds toy). Your own handler does not need this package: it needs only `@onceq/core`.",
  },
];

interface Manifest {
  name: string;
  version: string;
  description?: string;
  license?: string;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional: boolean }>;
  engines?: Record<string, string>;
}

function run(cmd: string[], cwd = ROOT): string {
  const result = Bun.spawnSync(cmd, {
    cwd,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env },
  });
  if (result.exitCode !== 0) {
    throw new Error(
      `${cmd.join(' ')} exited ${result.exitCode}:\n${result.stdout.toString()}${result.stderr.toString()}`,
    );
  }
  return result.stdout.toString();
}

function readManifest(dir: string): Manifest {
  return JSON.parse(readFileSync(join(ROOT, dir, 'package.json'), 'utf8')) as Manifest;
}

/** The version range an installed package asks of a workspace sibling: its own version. */
function published(deps: Record<string, string> | undefined): Record<string, string> | undefined {
  if (deps === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const [name, range] of Object.entries(deps)) {
    if (range.startsWith('workspace:')) {
      const sibling = PACKAGES.find((p) => readManifest(p.dir).name === name);
      if (sibling === undefined) throw new Error(`${name} is not a public package`);
      out[name] = `^${readManifest(sibling.dir).version}`;
    } else {
      out[name] = range;
    }
  }
  return out;
}

/** Every `.d.ts` under `dir`: `from './x.ts'` becomes `from './x.js'`, which resolves everywhere. */
function rewriteDeclarations(dir: string): void {
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.d.ts')) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, 'utf8');
    writeFileSync(
      path,
      text.replace(/(from\s+|import\()(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g, '$1$2$3.js$2'),
    );
  }
}

/**
 * Every source map under `dist`: each source named as the package's own `src/<file>`
 * (bun writes it relative to where it built, which means nothing once installed). The
 * sources' text is inside the map, so a stack trace reads `…/@onceq/core/src/queue/x.ts:42`.
 */
function rewriteSourceMaps(dist: string, src: string, out: string): void {
  for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.js.map')) continue;
    const path = join(entry.parentPath, entry.name);
    const map = JSON.parse(readFileSync(path, 'utf8')) as { sources: string[] };
    map.sources = map.sources.map((source) => {
      const file = resolve(entry.parentPath, source);
      const inside = relative(src, file);
      if (inside.startsWith('..')) throw new Error(`${path}: a source outside src/: ${file}`);
      return relative(entry.parentPath, join(out, 'src', inside));
    });
    writeFileSync(path, JSON.stringify(map));
  }
}

function buildPackage(pkg: PublicPackage): string {
  const manifest = readManifest(pkg.dir);
  const short = manifest.name.replace(/^@onceq\//, '');
  const out = join(BUILD, short);
  const dist = join(out, 'dist');
  rmSync(out, { recursive: true, force: true });
  mkdirSync(dist, { recursive: true });

  const external = [
    ...Object.keys(manifest.dependencies ?? {}),
    ...Object.keys(manifest.peerDependencies ?? {}),
  ];
  const entryFiles = Object.values(pkg.entries).map((e) => join(ROOT, pkg.dir, 'src', `${e}.ts`));
  run([
    'bun',
    'build',
    ...entryFiles,
    '--target=bun',
    '--format=esm',
    '--splitting',
    // Linked source maps with the sources inside: an error thrown by the library points
    // at its line in src/, not into a bundled chunk.
    '--sourcemap=linked',
    // Class names survive the bundler's renaming: an error's `name` is its class's.
    '--keep-names',
    `--outdir=${dist}`,
    `--root=${join(ROOT, pkg.dir, 'src')}`,
    ...external.flatMap((name) => ['--external', name]),
  ]);
  rewriteSourceMaps(dist, join(ROOT, pkg.dir, 'src'), out);

  // Declarations. A sibling public package is seen through its built declarations, so
  // its sources are not emitted again here.
  const tsconfig = join(out, 'tsconfig.build.json');
  const paths: Record<string, string[]> = {};
  for (const name of Object.keys(manifest.peerDependencies ?? {})) {
    const sibling = PACKAGES.find((p) => readManifest(p.dir).name === name);
    if (sibling !== undefined) {
      paths[name] = [join(BUILD, name.replace(/^@onceq\//, ''), 'dist', 'index.d.ts')];
    }
  }
  writeFileSync(
    tsconfig,
    JSON.stringify({
      extends: join(ROOT, 'tsconfig.base.json'),
      include: [join(ROOT, pkg.dir, 'src', '**', '*.ts')],
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        // Members marked `@internal` (the store's driver seam) are not part of the API.
        stripInternal: true,
        outDir: dist,
        rootDir: join(ROOT, pkg.dir, 'src'),
        // The config sits outside the repository when OUTDIR does: find @types here.
        typeRoots: [join(ROOT, 'node_modules', '@types')],
        paths,
      },
    }),
  );
  run([TSC, '-p', tsconfig]);
  rmSync(tsconfig);
  rewriteDeclarations(dist);

  const exports: Record<string, { types: string; default: string }> = {};
  for (const [subpath, entry] of Object.entries(pkg.entries)) {
    exports[subpath] = { types: `./dist/${entry}.d.ts`, default: `./dist/${entry}.js` };
  }
  const files = ['dist', 'LICENSE', 'README.md'];
  const changelog = join(ROOT, 'CHANGELOG.md');
  if (existsSync(changelog)) {
    cpSync(changelog, join(out, 'CHANGELOG.md'));
    files.push('CHANGELOG.md');
  }
  const installed = {
    name: manifest.name,
    version: manifest.version,
    description: manifest.description,
    license: manifest.license,
    type: 'module',
    exports,
    files,
    engines: manifest.engines,
    sideEffects: false,
    dependencies: published(manifest.dependencies),
    peerDependencies: published(manifest.peerDependencies),
    peerDependenciesMeta: manifest.peerDependenciesMeta,
  };
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(installed, null, 2)}\n`);
  cpSync(join(ROOT, 'LICENSE'), join(out, 'LICENSE'));
  writeFileSync(
    join(out, 'README.md'),
    `# ${manifest.name}\n\n${pkg.about}\n\nLicense: MIT.${existsSync(changelog) ? ' Changes: CHANGELOG.md.' : ''}\n`,
  );
  mkdirSync(OUT, { recursive: true });
  run(['bun', 'pm', 'pack', '--destination', OUT, '--quiet'], out);
  const tarball = join(
    OUT,
    `${short === manifest.name ? short : `onceq-${short}`}-${manifest.version}.tgz`,
  );
  if (!existsSync(tarball)) throw new Error(`bun pm pack wrote no ${tarball}`);
  return tarball;
}

// core first: handler's declarations are built against core's.
for (const pkg of PACKAGES) console.log(`packed ${buildPackage(pkg)}`);
