/** Markdown pages imported as text (`with { type: 'text' }`): the compiled binary embeds them. */
declare module '*.md' {
  const text: string;
  export default text;
}
