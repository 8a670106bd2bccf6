// Side-by-side benchmark of an ACP proxy + HTTP file API (agentbe's
// acp/internal/testserver or the sandbox-agent binary), from the same Node
// client: ACP request round trip through the proxy (p50/p99 over N
// requests answered by the test agent), and 64 MiB file PUT and GET.
//
//	BASE_URL=http://127.0.0.1:PORT AGENT=test N=2000 SIZE_MIB=64 node acp-bench.mjs
//
// Prints one JSON line.
const base = process.env.BASE_URL;
const agent = process.env.AGENT ?? "test";
const n = Number(process.env.N ?? 2000);
const sizeMiB = Number(process.env.SIZE_MIB ?? 64);
const server = `bench-${process.pid}`;
const post = (body, q = "") =>
  fetch(`${base}/v1/acp/${server}${q}`, { method: "POST", headers: { "content-type": "application/json" }, body });

const out = {};
let r = await post(JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1 } }), `?agent=${agent}`);
if (r.status !== 200) throw new Error(`bootstrap ${r.status} ${await r.text()}`);
await r.text();
const times = [];
for (let i = 1; i <= n + 100; i++) {
  const t0 = process.hrtime.bigint();
  r = await post(`{"jsonrpc":"2.0","id":${i},"method":"_bench/echo","params":{"i":${i}}}`);
  await r.text();
  if (r.status !== 200) throw new Error(`rpc ${r.status}`);
  if (i > 100) times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
times.sort((a, b) => a - b);
out.acp_p50_ms = +times[Math.floor(times.length / 2)].toFixed(3);
out.acp_p99_ms = +times[Math.floor(times.length * 0.99)].toFixed(3);
await fetch(`${base}/v1/acp/${server}`, { method: "DELETE", signal: AbortSignal.timeout(3000) }).catch(() => {
  out.delete_hung = true; // sandbox-agent 0.4.2 never answers DELETE
});

if (sizeMiB > 0) {
  const size = sizeMiB << 20;
  const chunk = new Uint8Array(1 << 20).fill(97);
  const body = new ReadableStream({
    start() { this.sent = 0; },
    pull(c) {
      if (this.sent >= size) return c.close();
      c.enqueue(chunk);
      this.sent += chunk.length;
    },
  });
  let t0 = process.hrtime.bigint();
  let putText = "";
  try {
    r = await fetch(`${base}/v1/fs/file?path=bench.bin`, { method: "PUT", body, duplex: "half",
      headers: { "content-type": "application/octet-stream" } });
    putText = await r.text();
  } catch (err) {
    r = { status: 0 }; // the server closed the connection mid-body
    putText = String(err.cause ?? err);
  }
  let secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.put_status = r.status;
  out.put_mib_s = r.status === 200 ? +(sizeMiB / secs).toFixed(1) : null;
  if (r.status !== 200) out.put_error = putText.slice(0, 200);
  if (r.status !== 200) {
    // Seed the file another way so GET can be measured.
    const { writeFileSync } = await import("node:fs");
    writeFileSync(process.env.SEED_PATH, Buffer.alloc(size, 97));
  }
  t0 = process.hrtime.bigint();
  r = await fetch(`${base}/v1/fs/file?path=${encodeURIComponent(process.env.GET_PATH ?? "bench.bin")}`);
  let got = 0;
  for await (const c of r.body) got += c.length;
  secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out.get_status = r.status;
  out.get_mib_s = got === size ? +(sizeMiB / secs).toFixed(1) : null;
}
console.log(JSON.stringify(out));
