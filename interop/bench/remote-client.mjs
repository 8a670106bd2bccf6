// Times the TypeScript reference client (agent-backend@0.13.2) doing what
// BenchmarkRemoteSideBySide times for our Remote, against the same daemon.
// Usage: node remote-client.mjs <host> <port> <token> <rootDir> <op> <n>
// Prints one JSON line: {"op":…, "n":…, "nsPerOp":…, "bytesPerOp":…}.
import { RemoteFilesystemBackend } from 'agent-backend';

const [host, port, token, rootDir, op, nArg] = process.argv.slice(2);
const n = Number(nArg);
const b = new RemoteFilesystemBackend({ rootDir, host, port: Number(port), authToken: token || undefined });
const small = Buffer.alloc(4096, 7);
const big = Buffer.alloc(64 << 20, 9);

const ops = {
  write4k: async (i) => b.write(`bench/ts-${i % 64}.bin`, small),
  read4k: async () => b.read('bench/ts-fixed.bin', { encoding: 'buffer' }),
  write64m: async () => b.write('bench/ts-big.bin', big),
  read64m: async () => b.read('bench/ts-big-fixed.bin', { encoding: 'buffer' }),
  exec: async () => b.exec('true'),
};
const bytes = { write4k: 4096, read4k: 4096, write64m: big.length, read64m: big.length, exec: 0 };

try {
  await b.write('bench/ts-fixed.bin', small);
  if (op === 'read64m') await b.write('bench/ts-big-fixed.bin', big);
  await ops[op](0); // warm up: connection and SFTP session
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await ops[op](i);
  const ns = Number(process.hrtime.bigint() - start);
  console.log(JSON.stringify({ op, n, nsPerOp: ns / n, bytesPerOp: bytes[op] }));
} finally {
  await b.destroy();
}
