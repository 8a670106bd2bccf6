// Drives agentbe's /v1/processes with sandbox-agent's own TypeScript SDK
// (0.4.2), unchanged: config and its concurrency limit, run, create,
// list, get, logs (plain and followed), input, stop, kill, delete, and a
// terminal session over the WebSocket (tty, resize, ^C). Run by
// acp/process_interop_test.go against acp/internal/testserver (Node 20
// needs --experimental-websocket):
//
//	BASE_URL=http://127.0.0.1:PORT node --experimental-websocket processes-sandbox-agent.test.mjs
//
// Exits non-zero (with the failed check on stderr) on any mismatch.
import { SandboxAgent } from "sandbox-agent";
import assert from "node:assert/strict";

const sdk = await SandboxAgent.connect({ baseUrl: process.env.BASE_URL });
const b64 = (s) => Buffer.from(s).toString("base64");
const text = (entries) => entries.map((e) => Buffer.from(e.data, "base64").toString()).join("");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(fn, what) {
  for (let i = 0; i < 500; i++) {
    const v = await fn();
    if (v) return v;
    await sleep(20);
  }
  throw new Error("timed out waiting for " + what);
}

// Config.
const cfg = await sdk.getProcessConfig();
assert.equal(cfg.maxConcurrentProcesses, 64);
assert.deepEqual(await sdk.setProcessConfig(cfg), cfg);

// The concurrency limit as the SDK sees it: a start over it is refused
// (409, a problem naming the limit); a run is not counted against it.
await sdk.setProcessConfig({ ...cfg, maxConcurrentProcesses: 1 });
const held = await sdk.createProcess({ command: "sleep", args: ["30"] });
await assert.rejects(sdk.createProcess({ command: "true" }), (e) => {
  assert.equal(e.status, 409);
  assert.match(e.problem?.detail ?? "", /max concurrent process limit reached \(1\)/);
  return true;
});
assert.equal((await sdk.runProcess({ command: "sh", args: ["-c", "exit 4"] })).exitCode, 4);
assert.equal((await sdk.killProcess(held.id, { waitMs: 3000 })).status, "exited");
await sdk.deleteProcess(held.id);
assert.deepEqual(await sdk.setProcessConfig(cfg), cfg);

// Run.
const run = await sdk.runProcess({ command: "sh", args: ["-c", "echo hi; echo err >&2; exit 3"] });
assert.equal(run.exitCode, 3);
assert.equal(run.stdout, "hi\n");
assert.equal(run.stderr, "err\n");
assert.equal(run.timedOut, false);
const timed = await sdk.runProcess({ command: "sleep", args: ["5"], timeoutMs: 200 });
assert.equal(timed.timedOut, true);
assert.equal(timed.exitCode ?? null, null);

// A pipe process: create, input, logs, follow, stop, delete.
const cat = await sdk.createProcess({ command: "cat", interactive: true });
assert.equal(cat.status, "running");
assert.ok(cat.pid > 0);
assert.ok((await sdk.listProcesses()).processes.some((p) => p.id === cat.id));
assert.equal((await sdk.getProcess(cat.id)).id, cat.id);
assert.equal((await sdk.sendProcessInput(cat.id, { data: b64("one\n") })).bytesWritten, 4);
await until(async () => text((await sdk.getProcessLogs(cat.id)).entries) === "one\n", "logs");
const seen = [];
const sub = await sdk.followProcessLogs(cat.id, (e) => seen.push(e));
await sdk.sendProcessInput(cat.id, { data: "two\n", encoding: "utf8" });
await until(() => text(seen) === "one\ntwo\n", "followed logs");
assert.deepEqual(seen.map((e) => e.sequence), [1, 2]);
sub.close();
// Re-attach from the last sequence seen.
await sdk.sendProcessInput(cat.id, { data: b64("three\n") });
const again = [];
const sub2 = await sdk.followProcessLogs(cat.id, (e) => again.push(e), { since: 2 });
await until(() => text(again) === "three\n", "re-attached logs");
sub2.close();
await assert.rejects(sdk.deleteProcess(cat.id));
const stopped = await sdk.stopProcess(cat.id, { waitMs: 3000 });
assert.equal(stopped.status, "exited");
await sdk.deleteProcess(cat.id);
await assert.rejects(sdk.getProcess(cat.id));

const sl = await sdk.createProcess({ command: "sleep", args: ["30"] });
assert.equal((await sdk.killProcess(sl.id, { waitMs: 3000 })).status, "exited");

// A terminal: tty, resize (frame and route), ^C, exit.
const sh = await sdk.createProcess({ command: "sh", args: ["-i"], tty: true, interactive: true });
const term = sdk.connectProcessTerminal(sh.id);
let screen = "";
let exit = null;
term.onData((d) => { screen += Buffer.from(d).toString(); });
term.onExit((s) => { exit = s; });
await new Promise((resolve) => term.onReady(resolve));
term.sendInput("tty\n");
// /dev/pts/N; under bwrap the terminal is the sandbox's /dev/console.
await until(() => screen.includes("/dev/pts/") || screen.includes("/dev/console"), "tty");
term.resize({ cols: 81, rows: 21 });
term.sendInput("stty size\n");
await until(() => screen.includes("21 81"), "stty size after a resize frame");
await sdk.resizeProcessTerminal(sh.id, { cols: 99, rows: 33 });
term.sendInput("stty size\n");
await until(() => screen.includes("33 99"), "stty size after the resize route");
// The job says when it runs: it is the terminal's foreground by then.
term.sendInput("sh -c 'echo job-$((1+1)); exec sleep 50'; echo slept-$((1+1))\n");
await until(() => screen.includes("job-2"), "the job started");
term.sendInput("\x03");
term.sendInput("echo alive-$((40+2))\n");
await until(() => screen.includes("alive-42"), "the shell after ^C");
assert.ok(!screen.includes("slept-2"));
term.sendInput("exit 5\n");
await until(() => exit !== null, "exit frame");
assert.equal(exit.exitCode, 5);
await until(async () => (await sdk.getProcess(sh.id)).status === "exited", "exited");
term.close();
console.log("ok");
process.exit(0);
