/**
 * The named types a module's exports mention and that the module does not export itself:
 * every exported function's parameters and result, every exported class's and
 * interface's public members, every exported type alias, followed through the types they
 * name. A user who can call a function can name what it takes and returns only if each
 * of these is exported; an empty list means the entry is closed.
 */
import ts from 'typescript';

export interface OpenType {
  /** The type's name as declared. */
  name: string;
  /** Where it is declared, relative to `root`. */
  file: string;
}

/**
 * For each of `entries` (one program for all: a typecheck is slow), the named types its
 * exports mention, declared under `ownDir`, that neither it nor the first entry (the
 * root, which a subpath may rely on) exports.
 */
export function unexportedTypes(
  entries: readonly string[],
  ownDir: string,
  root: string,
): Map<string, OpenType[]> {
  const program = ts.createProgram([...entries], {
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.Preserve,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    strict: true,
    noEmit: true,
    types: ['bun'],
  });
  const checker = program.getTypeChecker();
  const resolve = (s: ts.Symbol) =>
    s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
  const exportsOf = (file: string) => {
    const source = program.getSourceFile(file);
    if (source === undefined) throw new Error(`no source file ${file}`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    if (moduleSymbol === undefined) throw new Error(`${file} is not a module`);
    return checker.getExportsOfModule(moduleSymbol).map(resolve);
  };
  const result = new Map<string, OpenType[]>();
  for (const entry of entries) {
    const alsoFrom = entry === entries[0] ? [] : entries.slice(0, 1);
    result.set(
      entry,
      openTypesOf(checker, resolve, exportsOf(entry), alsoFrom.flatMap(exportsOf), ownDir, root),
    );
  }
  return result;
}

function openTypesOf(
  checker: ts.TypeChecker,
  resolve: (s: ts.Symbol) => ts.Symbol,
  own: readonly ts.Symbol[],
  also: readonly ts.Symbol[],
  ownDir: string,
  root: string,
): OpenType[] {
  const exported = new Set([...own, ...also]);
  const ours = (s: ts.Symbol) =>
    (s.declarations ?? []).some((d) => d.getSourceFile().fileName.startsWith(ownDir));

  const seenTypes = new Set<ts.Type>();
  const seenSymbols = new Set<ts.Symbol>();
  const open = new Map<ts.Symbol, OpenType>();

  const visitSymbol = (symbol: ts.Symbol) => {
    if (seenSymbols.has(symbol)) return;
    seenSymbols.add(symbol);
    if (!ours(symbol)) return;
    const named =
      symbol.flags &
      (ts.SymbolFlags.Interface |
        ts.SymbolFlags.TypeAlias |
        ts.SymbolFlags.Class |
        ts.SymbolFlags.Enum);
    if (named && !exported.has(symbol)) {
      const declaration = symbol.declarations?.[0];
      open.set(symbol, {
        name: symbol.getName(),
        file: declaration?.getSourceFile().fileName.slice(root.length + 1) ?? '?',
      });
    }
    if (symbol.flags & (ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Interface)) {
      visitType(checker.getDeclaredTypeOfSymbol(symbol));
      for (const d of symbol.declarations ?? []) {
        if (ts.isTypeAliasDeclaration(d)) visitNode(d.type);
      }
    }
    if (symbol.flags & ts.SymbolFlags.Class) {
      visitType(checker.getDeclaredTypeOfSymbol(symbol));
      const declaration = symbol.valueDeclaration;
      if (declaration !== undefined) {
        visitType(checker.getTypeOfSymbolAtLocation(symbol, declaration));
      }
    }
    if (symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Variable)) {
      const declaration = symbol.valueDeclaration;
      if (declaration !== undefined) {
        visitType(checker.getTypeOfSymbolAtLocation(symbol, declaration));
      }
    }
  };

  /** Type references written in an alias (`type A = B | C`) keep their names here. */
  const visitNode = (node: ts.Node) => {
    if (ts.isTypeReferenceNode(node)) {
      const symbol = checker.getSymbolAtLocation(node.typeName);
      if (symbol !== undefined) visitSymbol(resolve(symbol));
    }
    ts.forEachChild(node, visitNode);
  };

  const isPublic = (member: ts.Symbol) => {
    if (member.getName().startsWith('#') || member.getName().startsWith('__')) return false;
    const declaration = member.valueDeclaration ?? member.declarations?.[0];
    if (declaration === undefined) return false;
    // `@internal` members are stripped from the shipped declarations (scripts/pack.ts).
    if (ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === 'internal')) return false;
    const modifiers = ts.getCombinedModifierFlags(declaration);
    return !(modifiers & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected));
  };

  const visitSignature = (signature: ts.Signature) => {
    for (const parameter of signature.getParameters()) {
      const declaration = parameter.valueDeclaration;
      if (declaration === undefined) continue;
      if (ts.isParameter(declaration) && declaration.type !== undefined) {
        visitNode(declaration.type);
      }
      visitType(checker.getTypeOfSymbolAtLocation(parameter, declaration));
    }
    const declaration = signature.getDeclaration();
    if (declaration !== undefined && 'type' in declaration && declaration.type !== undefined) {
      visitNode(declaration.type as ts.Node);
    }
    visitType(signature.getReturnType());
  };

  const visitType = (type: ts.Type) => {
    if (seenTypes.has(type)) return;
    seenTypes.add(type);
    const symbol = type.aliasSymbol ?? type.getSymbol();
    if (symbol !== undefined && !(symbol.flags & ts.SymbolFlags.TypeLiteral)) {
      visitSymbol(symbol);
      if (!ours(symbol) && !(symbol.flags & ts.SymbolFlags.ObjectLiteral)) {
        // A library type (Promise, Array, Map…): only its type arguments are ours.
        for (const argument of type.aliasTypeArguments ?? []) visitType(argument);
        if (type.flags & ts.TypeFlags.Object) {
          for (const argument of checker.getTypeArguments(type as ts.TypeReference) ?? []) {
            visitType(argument);
          }
        }
        return;
      }
    }
    for (const argument of type.aliasTypeArguments ?? []) visitType(argument);
    if (type.isUnionOrIntersection()) for (const part of type.types) visitType(part);
    if (type.flags & ts.TypeFlags.Object) {
      const reference = type as ts.TypeReference;
      if ((reference.objectFlags ?? 0) & ts.ObjectFlags.Reference) {
        for (const argument of checker.getTypeArguments(reference)) visitType(argument);
      }
      for (const member of type.getProperties()) {
        if (!isPublic(member)) continue;
        const declaration = member.valueDeclaration ?? member.declarations?.[0];
        if (declaration === undefined) continue;
        if ('type' in declaration && declaration.type !== undefined) {
          visitNode(declaration.type as ts.Node);
        }
        visitType(checker.getTypeOfSymbolAtLocation(member, declaration));
      }
      for (const signature of type.getCallSignatures()) visitSignature(signature);
      for (const signature of type.getConstructSignatures()) visitSignature(signature);
    }
  };

  for (const symbol of own) visitSymbol(symbol);
  return [...open.values()].sort((a, b) => a.name.localeCompare(b.name));
}
