/**
 * The local stack is reachable from this machine only: every socket its processes listen on (the API, the S3 and SQS
 * emulator, DynamoDB Local's JVM) is bound to a loopback address, read from /proc as `ss -ltnp` would show it.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { processTree } from '../support/processes.js';
import { stack } from './client.js';

function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode !== undefined) inodes.add(inode);
    } catch {
      // Closed while we looked.
    }
  }
  return inodes;
}

interface Listener {
  address: string;
  port: number;
  inode: string;
}

/** Listening TCP sockets (state 0A) of the machine, with their local address as /proc writes it (hex). */
function listeners(): Listener[] {
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      .filter((fields) => fields[3] === '0A')
      .map((fields) => {
        const [address = '', port = '0'] = (fields[1] ?? '').split(':');
        return { address, port: Number.parseInt(port, 16), inode: fields[9] ?? '' };
      }),
  );
}

/** 127.0.0.0/8 (IPv4, or IPv4-mapped in IPv6) or ::1, as /proc/net writes them (32-bit words in host order). */
function isLoopback(hex: string): boolean {
  if (hex.length === 8) return hex.endsWith('7F');
  if (hex === '00000000000000000000000001000000') return true;
  return hex.startsWith('0000000000000000FFFF0000') && hex.endsWith('7F');
}

test('every socket the local stack listens on is bound to loopback', () => {
  const { pid, baseUrl, endpoints } = stack();
  const ours = new Set(processTree(pid).flatMap((p) => [...socketInodes(p)]));
  const listening = listeners().filter((l) => ours.has(l.inode));
  // The API, the S3/SQS emulator and DynamoDB Local at least: the check sees them all.
  const ports = [baseUrl, endpoints.dynamodb, endpoints.s3].map((url) => Number(new URL(url).port));
  expect(ports.every((port) => listening.some((l) => l.port === port))).toBe(true);
  expect(listening.filter((l) => !isLoopback(l.address)).map((l) => `${l.address}:${l.port}`)).toEqual([]);
});
