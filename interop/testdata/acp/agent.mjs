// Test ACP agent for agentbe's ACP proxy tests, built on the official
// @agentclientprotocol/sdk (0.16.1). It speaks newline-delimited JSON-RPC on
// stdin/stdout. The SDK is loaded from $ACP_SDK (a file path), so the script
// can be copied into any workspace.
//
// session/prompt behaviour depends on the prompt text:
//   "silent"  never answers (the proxy must time out with 504)
//   "die"     exits with status 3 (the proxy must answer 502)
//   "env"     streams one chunk holding the sorted names of its environment
//   "pid"     streams one chunk holding its process id
//   anything  streams three agent_message_chunk updates, asks the client for
//             permission (a request to the client) and echoes the outcome
import { pathToFileURL } from "node:url";
import { Readable, Writable } from "node:stream";

const acp = await import(pathToFileURL(process.env.ACP_SDK).href);

class TestAgent {
  constructor(conn) {
    this.conn = conn;
    this.sessions = 0;
  }
  async initialize(_params) {
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      authMethods: [],
    };
  }
  async newSession(_params) {
    this.sessions += 1;
    return { sessionId: `sess-${process.pid}-${this.sessions}` };
  }
  async authenticate(_params) {
    return {};
  }
  async setSessionMode(_params) {
    return {};
  }
  async cancel(_params) {}
  async extMethod(method, params) {
    return { method, params };
  }
  async extNotification(method, params) {
    await this.conn.extNotification("echo/notification", { method, params });
  }
  async prompt(params) {
    const text = params.prompt.map((b) => b.text ?? "").join("");
    const say = (t) =>
      this.conn.sessionUpdate({
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } },
      });
    if (text === "silent") return new Promise(() => {});
    if (text === "die") process.exit(3);
    if (text === "env") {
      await say(Object.keys(process.env).sort().join(","));
      return { stopReason: "end_turn" };
    }
    if (text === "pid") {
      await say(String(process.pid));
      return { stopReason: "end_turn" };
    }
    for (const part of ["Hello", ", ", "world"]) await say(part);
    const perm = await this.conn.requestPermission({
      sessionId: params.sessionId,
      toolCall: { toolCallId: "call-1", title: "write file", kind: "edit", status: "pending" },
      options: [
        { optionId: "allow", name: "Allow", kind: "allow_once" },
        { optionId: "deny", name: "Deny", kind: "reject_once" },
      ],
    });
    await say(`permission:${perm.outcome.outcome}:${perm.outcome.optionId ?? ""}`);
    return { stopReason: "end_turn" };
  }
}

const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
new acp.AgentSideConnection((conn) => new TestAgent(conn), stream);
