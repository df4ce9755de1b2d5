/** Process helpers (Linux /proc): find the processes a child started, and check that they are gone. */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

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

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on every Linux this runs on). */
let clockTicks: number | undefined;
async function ticksPerSecond(): Promise<number> {
  if (clockTicks === undefined) {
    const out = await promisify(execFile)('getconf', ['CLK_TCK']).catch(() => ({ stdout: '100' }));
    clockTicks = Number(out.stdout.trim()) || 100;
  }
  return clockTicks;
}

/** CPU time (user + system) a process has used so far, in ms; NaN when it is gone. */
export async function processCpuMs(pid: number): Promise<number> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after "(comm)": state is field 3, utime field 14, stime field 15 (man 5 proc).
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / (await ticksPerSecond());
  } catch {
    return Number.NaN;
  }
}

/** CPU time every core of the machine has spent busy (anything but idle and iowait) so far, in ms. */
export async function machineBusyCpuMs(): Promise<number> {
  const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
  // "cpu user nice system idle iowait irq softirq steal guest guest_nice"; guest time is already in user.
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const busy = [user, nice, system, irq, softirq, steal].reduce<number>((sum, v) => sum + (v ?? 0), 0);
  return (busy * 1000) / (await ticksPerSecond());
}
