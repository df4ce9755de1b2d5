/** Process helpers (Linux /proc): find the processes a child started, and check that they are gone. */
import { readdir, readFile } from 'node:fs/promises';

/** Every descendant process of `pid` with its command name. */
export async function descendants(pid: number): Promise<{ pid: number; comm: string }[]> {
  const children = new Map<number, number[]>();
  const comm = new Map<number, string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = await readFile(`/proc/${entry}/stat`, 'utf8');
      // "pid (comm) state ppid …": comm may contain spaces, so split after the last ')'.
      const close = text.lastIndexOf(')');
      const ppid = Number(text.slice(close + 2).split(' ')[1]);
      comm.set(Number(entry), text.slice(text.indexOf('(') + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // The process exited while we looked.
    }
  }
  const out: { pid: number; comm: string }[] = [];
  const queue = [...(children.get(pid) ?? [])];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    out.push({ pid: next, comm: comm.get(next) ?? '' });
    queue.push(...(children.get(next) ?? []));
  }
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
