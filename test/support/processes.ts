/** The processes of this machine as /proc shows them: a process tree, a process's command line. Linux only. */
import { readdirSync, readFileSync } from 'node:fs';

/** `pid` and every process below it. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone while we looked.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []));
  return tree;
}

/** Every live process whose command line contains `text` (e.g. a stack's private data folder). */
export function processesMentioning(text: string): number[] {
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(text);
      } catch {
        return false;
      }
    })
    .map(Number);
}
