"""A third-party ACP agent for missionboard's black-box tests, written on the official
Python SDKs: `agent-client-protocol` (the agent side of ACP) and `mcp` (the client it
uses to reach the `mission` MCP server handed to it in `session/new.mcpServers`).

It has no model. What it does is chosen by a `sdk: <scenario>` line in the prompt:

- `land`      report progress, ask the operator a question, report the answer as the
              result, finish landed (the default);
- `error`     raise from the prompt handler, so the SDK answers the turn with
              "Internal error" and `data: {"details": <the exception>}`;
- `permissions` ask permission for a mission tool three ways -- by its display title,
              by the `missionboard.missionTool` `_meta` key, and unnamed -- report what
              the host chose for each, then finish landed;
- `garbage`   write a line that is not JSON-RPC to stdout, then call mission_finish
              (landed) as soon as the host cancels the turn;
- `garbage-end` write such a line and end the turn at once;
- `elicit`    send the client a form (`elicitation/create`, form mode, scoped to the
              session: a branch to type, an environment to pick, a retry count),
              report the action and values it got back as the result, finish landed.

Diagnostics go to stderr; stdout belongs to the protocol.
"""

import asyncio
import os
import sys
from contextlib import asynccontextmanager

import acp
from acp.schema import (
    AgentCapabilities,
    ElicitationFormSessionMode,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ToolCallUpdate,
)
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

NAME = "sdk-test-agent"
MISSION_SERVER = "mission"
MISSION_TOOL_META_KEY = "missionboard.missionTool"


def log(*parts):
    print(f"{NAME}:", *parts, file=sys.stderr, flush=True)


def scenario_of(text):
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("sdk:"):
            return line[len("sdk:"):].strip()
    return "land"


def result_text(result):
    """The text of an MCP tool result (the mission tools answer in one text block)."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    if getattr(result, "is_error", False) or getattr(result, "isError", False):
        raise RuntimeError(f"mission tool failed: {text}")
    return text


class Session:
    def __init__(self, session_id, mission_server):
        self.id = session_id
        self.mission_server = mission_server
        self.cancelled = asyncio.Event()

    @asynccontextmanager
    async def mission(self):
        """The mission MCP server, connected for the length of one turn."""
        if self.mission_server is None:
            raise RuntimeError("session/new handed this agent no 'mission' MCP server")
        server = self.mission_server
        params = StdioServerParameters(
            command=server.command,
            args=list(server.args),
            env={e.name: e.value for e in server.env} or None,
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


class SdkAgent:
    def __init__(self):
        self.conn = None
        self.sessions = {}

    def on_connect(self, conn):
        self.conn = conn

    async def initialize(self, protocol_version, client_capabilities=None, client_info=None, **kwargs):
        log(f"initialize (client protocol {protocol_version})")
        return InitializeResponse(
            protocol_version=acp.PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name=NAME, version="0.1.0"),
        )

    async def new_session(self, cwd, additional_directories=None, mcp_servers=None, **kwargs):
        session_id = f"sdk-session-{len(self.sessions) + 1}"
        mission = next(
            (s for s in mcp_servers or [] if getattr(s, "name", None) == MISSION_SERVER), None
        )
        log(f"session/new {session_id} cwd={cwd} mission-server={'yes' if mission else 'no'}")
        self.sessions[session_id] = Session(session_id, mission)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id, **kwargs):
        log(f"session/cancel {session_id}")
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancelled.set()

    async def prompt(self, session_id, prompt, **kwargs):
        session = self.sessions[session_id]
        session.cancelled.clear()
        text = "\n".join(getattr(block, "text", "") for block in prompt)
        scenario = scenario_of(text)
        log(f"prompt: scenario {scenario}")
        await self.conn.session_update(
            session_id, acp.update_agent_message_text(f"running scenario {scenario}")
        )
        if scenario == "error":
            raise RuntimeError("the upstream model answered HTTP 500: overloaded")
        if scenario == "garbage":
            return await self.garbage(session)
        if scenario == "garbage-end":
            os.write(1, b"sdk agent says goodbye on stdout\n")
            return PromptResponse(stop_reason="end_turn")
        if scenario == "permissions":
            return await self.permissions(session)
        if scenario == "elicit":
            return await self.elicit(session)
        return await self.land(session)

    async def land(self, session):
        async with session.mission() as mission:
            await mission.call_tool(
                "mission_report", {"kind": "progress", "summary": "sdk agent at work"}
            )
            answer = result_text(
                await mission.call_tool(
                    "mission_ask_attention", {"summary": "Which branch should the release go on?"}
                )
            )
            await mission.call_tool(
                "mission_report", {"kind": "result", "summary": f"released on: {answer}"}
            )
            await mission.call_tool(
                "mission_finish", {"status": "landed", "reason": "released by the sdk agent"}
            )
        return PromptResponse(stop_reason="end_turn")

    async def elicit(self, session):
        form = ElicitationFormSessionMode.model_validate({
            "sessionId": session.id,
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "branch": {"type": "string", "title": "Branch"},
                    "env": {"type": "string", "enum": ["staging", "prod"]},
                    "retries": {"type": "integer", "minimum": 0, "maximum": 5, "default": 1},
                },
                "required": ["branch", "env"],
            },
        })
        response = await self.conn.create_elicitation("Where should the release go?", form)
        content = getattr(response, "content", None) or {}
        values = "; ".join(f"{k}={v}" for k, v in sorted(content.items()))
        got = f"{response.action} {values}".strip()
        log(f"elicitation: {got}")
        async with session.mission() as mission:
            await mission.call_tool("mission_report", {"kind": "result", "summary": f"form: {got}"})
            await mission.call_tool("mission_finish", {"status": "landed"})
        return PromptResponse(stop_reason="end_turn")

    async def ask_permission(self, session, call_id, title, raw_input, meta=None):
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        tool_call = ToolCallUpdate(
            tool_call_id=call_id, title=title, kind="other", status="pending",
            raw_input=raw_input, field_meta=meta,
        )
        response = await self.conn.request_permission(session.id, tool_call, options)
        outcome = response.outcome
        chosen = getattr(outcome, "option_id", None) or outcome.outcome
        log(f"permission {call_id} ({title}): {chosen}")
        return "allowed" if chosen == "allow" else "rejected"

    async def permissions(self, session):
        by_title = await self.ask_permission(
            session, "perm-title", "Report to the operator", {"summary": "progress"}
        )
        by_meta = await self.ask_permission(
            session, "perm-meta", "Tool call", {"status": "landed"},
            {MISSION_TOOL_META_KEY: "mission_finish"},
        )
        unnamed = await self.ask_permission(session, "perm-unnamed", "Tool call", {"x": 1})
        async with session.mission() as mission:
            for label, chosen in (("by title", by_title), ("by _meta", by_meta), ("unnamed", unnamed)):
                await mission.call_tool(
                    "mission_report", {"kind": "finding", "summary": f"permission {label}: {chosen}"}
                )
            await mission.call_tool("mission_finish", {"status": "landed"})
        return PromptResponse(stop_reason="end_turn")

    async def garbage(self, session):
        async with session.mission() as mission:
            os.write(1, b"sdk agent says hello on stdout\n")
            # The host is to derail the mission on that line; a verdict sent while
            # the cancelled turn winds down must not outrun the derail.
            try:
                await asyncio.wait_for(session.cancelled.wait(), timeout=20)
            except asyncio.TimeoutError:
                log("no session/cancel within 20 s")
            result = await mission.call_tool("mission_finish", {"status": "landed"})
            log(f"mission_finish during the cancel grace: {result_text(result)!r}")
        return PromptResponse(stop_reason="cancelled")


def main():
    asyncio.run(acp.run_agent(SdkAgent()))


if __name__ == "__main__":
    main()
