/** What both backends' schema readers share: how a definition is compared. */

/** One definition with its whitespace collapsed, so formatting never reads as drift. */
export const normalize = (text: string) => text.replace(/\s+/g, ' ').trim();
