// Drives agentbe's ACP proxy and HTTP file API with sandbox-agent's own
// TypeScript SDK (0.4.2), unchanged: fs, config, agents and ACP
// (createSession, prompt with streamed updates and a permission request,
// dispose). Run by acp/interop_test.go against acp/internal/testserver:
//
//	BASE_URL=http://127.0.0.1:PORT TAR_FILE=x.tar node acp-sandbox-agent.test.mjs
//
// Exits non-zero (with the failed check on stderr) on any mismatch.
import { SandboxAgent } from "sandbox-agent";
import { readFileSync } from "node:fs";
import assert from "node:assert/strict";

const baseUrl = process.env.BASE_URL;
const sdk = await SandboxAgent.connect({ baseUrl });
const enc = new TextEncoder();

// Files.
const written = await sdk.writeFsFile({ path: "dir/a.txt" }, enc.encode("hello"));
assert.equal(written.bytesWritten, 5);
assert.ok(written.path.endsWith("/dir/a.txt"));
assert.equal(new TextDecoder().decode(await sdk.readFsFile({ path: "dir/a.txt" })), "hello");
const entries = await sdk.listFsEntries({ path: "dir" });
assert.equal(entries.length, 1);
assert.equal(entries[0].name, "a.txt");
assert.equal(entries[0].entryType, "file");
assert.equal(entries[0].size, 5);
const st = await sdk.statFs({ path: "dir" });
assert.equal(st.entryType, "directory");
assert.ok((await sdk.mkdirFs({ path: "d2/d3" })).path.endsWith("/d2/d3"));
const moved = await sdk.moveFs({ from: "dir/a.txt", to: "d2/b.txt" });
assert.ok(moved.to.endsWith("/d2/b.txt"));
await assert.rejects(sdk.moveFs({ from: "dir/missing", to: "d2/b.txt", overwrite: true }));
assert.ok((await sdk.deleteFsEntry({ path: "d2/b.txt" })).path.endsWith("/d2/b.txt"));
await assert.rejects(sdk.readFsFile({ path: "../outside" }));
const up = await sdk.uploadFsBatch(readFileSync(process.env.TAR_FILE), { path: "up" });
assert.equal(up.truncated, false);
assert.deepEqual(up.paths.map((p) => p.slice(p.indexOf("/up/"))), ["/up/t", "/up/t/a.txt"]);
assert.equal(new TextDecoder().decode(await sdk.readFsFile({ path: "up/t/a.txt" })), "A");

// Config.
const mcp = { type: "local", command: "node", args: ["x.js"], env: { A: "1" } };
await sdk.setMcpConfig({ directory: "proj", mcpName: "fs" }, mcp);
assert.deepEqual(await sdk.getMcpConfig({ directory: "proj", mcpName: "fs" }), mcp);
await sdk.deleteMcpConfig({ directory: "proj", mcpName: "fs" });
await assert.rejects(sdk.getMcpConfig({ directory: "proj", mcpName: "fs" }));
const skills = { sources: [{ type: "local", source: "./skills" }] };
await sdk.setSkillsConfig({ directory: "proj", skillName: "s" }, skills);
assert.deepEqual(await sdk.getSkillsConfig({ directory: "proj", skillName: "s" }), skills);
await sdk.deleteSkillsConfig({ directory: "proj", skillName: "s" });

// Agents.
const agents = await sdk.listAgents();
assert.ok(agents.agents.some((a) => a.id === "test"));
const info = await sdk.getAgent("test");
assert.equal(info.id, "test");

// ACP: the SDK bootstraps /v1/acp/{server_id}?agent=test, opens SSE,
// initializes, creates a session, prompts; the agent streams updates and
// asks for permission, which this client grants.
const session = await sdk.createSession({ agent: "test", cwd: "/" });
const events = [];
session.onEvent((e) => events.push(JSON.stringify(e)));
session.onPermissionRequest((req) => {
  session.rawRespondPermission(req.id, { outcome: { outcome: "selected", optionId: "allow" } });
});
const result = await session.prompt([{ type: "text", text: "hi" }]);
assert.equal(result.stopReason, "end_turn");
const deadline = Date.now() + 10000;
while (!events.some((e) => e.includes("permission:selected:allow")) && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
}
assert.ok(events.some((e) => e.includes("Hello")), "streamed update seen: " + events.length);
assert.ok(events.some((e) => e.includes("permission:selected:allow")), "permission outcome seen");
const servers = await sdk.listAcpServers();
assert.equal(servers.servers.length, 1);
assert.equal(servers.servers[0].agent, "test");
await sdk.dispose();
const after = await fetch(baseUrl + "/v1/acp").then((r) => r.json());
assert.equal(after.servers.length, 0, "dispose deleted the server");
console.log("ok");
