// A third-party ACP agent on the published TypeScript SDK (npm
// @agentclientprotocol/sdk, pinned in tests/agents/main.rs): its session's first prompt
// asks the client one form (`elicitation/create`, form mode, scoped to the session),
// writes the answer it received to received.json in the session's working directory,
// says it in a message and ends its turn; a later prompt (a nudge) only ends its turn.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { agent, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";

const cwds = new Map();
const asked = new Set();
let sessions = 0;

const app = agent({ name: "form-agent" })
  .onRequest(methods.agent.initialize, async () => ({
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {},
    authMethods: [],
  }))
  .onRequest(methods.agent.session.new, async ({ params }) => {
    sessions += 1;
    const sessionId = `form-${sessions}`;
    cwds.set(sessionId, params.cwd);
    return { sessionId };
  })
  .onRequest(methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    if (asked.has(sessionId)) return { stopReason: "end_turn" };
    asked.add(sessionId);
    const answer = await client.request(methods.client.elicitation.create, {
      sessionId,
      mode: "form",
      message: "Which release train should this go on?",
      requestedSchema: {
        type: "object",
        properties: {
          train: { type: "string", title: "Train", enum: ["stable", "beta"] },
          notes: { type: "string", title: "Release notes" },
          hotfix: { type: "boolean", default: false },
        },
        required: ["train", "notes"],
      },
    });
    writeFileSync(join(cwds.get(sessionId) ?? process.cwd(), "received.json"), JSON.stringify(answer));
    await client.notify(methods.client.session.update, {
      sessionId,
      update: {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `form answered: ${answer.action}` },
      },
    });
    return { stopReason: "end_turn" };
  })
  .onNotification(methods.agent.session.cancel, async () => {});

app.connect(ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
