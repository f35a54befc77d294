/**
 * The static imports between a tree's TypeScript files (`import … from`, `export … from`,
 * type-only ones included; a dynamic `import()` loads lazily and is left out), and the
 * cycles among them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** File → the files it imports, paths relative to `root`. */
export type ImportGraph = Map<string, string[]>;

const STATIC_IMPORT = /^\s*(?:import|export)\s[^;]*?\sfrom\s+'([^']+)'|^\s*import\s+'([^']+)'/gm;

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules') return [];
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/**
 * The graph of every `.ts` file under `dirs`. `packages` maps a bare specifier
 * (`@onceq/core`, `@onceq/core/internal`) to its file; other bare specifiers are
 * outside the graph.
 */
export function importGraph(
  root: string,
  dirs: readonly string[],
  packages: Readonly<Record<string, string>>,
): ImportGraph {
  const graph: ImportGraph = new Map();
  for (const file of dirs.flatMap((dir) => tsFiles(join(root, dir)))) {
    const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    const targets = new Set<string>();
    for (const m of text.matchAll(STATIC_IMPORT)) {
      const spec = (m[1] ?? m[2]) as string;
      let target: string | undefined;
      if (spec.startsWith('.')) target = resolve(dirname(file), spec);
      else if (packages[spec] !== undefined) target = join(root, packages[spec]);
      if (target !== undefined && existsSync(target)) targets.add(relative(root, target));
    }
    graph.set(relative(root, file), [...targets].sort());
  }
  return graph;
}

/** Every strongly connected set of two or more files (or a file importing itself), sorted. */
export function importCycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative enough for a few hundred files.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (node: string) => {
    indices.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, indices.get(next) as number));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) {
        cycles.push(component.sort());
      }
    }
  };
  for (const node of [...graph.keys()].sort()) if (!indices.has(node)) visit(node);
  return cycles.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}
