"""A scripted OpenAI Responses API (POST <base>/responses, streamed as server-sent
events), for codex-acp. See scripted.py for the script and the record.

A call of a tool the request offers inside a namespace (codex offers an MCP server's
tools as `{"type": "namespace", "name": "mcp__mission", "tools": [...]}`) is sent with
that namespace, as the model would; a call may also name one itself:
  {"tool": "mission_finish", "namespace": "mcp__mission", "input": {...}}
and a call whose input is a string is a custom (freeform) tool call, the shape codex's
`apply_patch` takes:
  {"tool": "apply_patch", "input": "*** Begin Patch\\n..."}
"""

import json

import scripted


def calls_with_namespace(turn, offered):
    """[(name, input, namespace or None)] of a turn; a call that names no namespace
    takes the one its tool was offered in, as the model would."""
    calls = [turn] if "tool" in turn else turn.get("tools", [])
    return [
        (c["tool"], c.get("input", {}), c.get("namespace") or offered.get(c["tool"]))
        for c in calls
    ]


def namespaces_of(body):
    """{tool name: namespace} of the tools a request offers inside namespaces."""
    found = {}
    for tool in (body or {}).get("tools") or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                found.setdefault(inner.get("name"), tool.get("name"))
    return found


def output_items(turn, index, offered):
    """The output items of one scripted turn, in the order they are streamed."""
    items = []
    if turn.get("text"):
        items.append(
            {
                "type": "message",
                "id": "msg_%s" % index,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}],
            }
        )
    for n, (name, args, namespace) in enumerate(calls_with_namespace(turn, offered)):
        call_id = "call_%s_%d" % (index, n)
        if isinstance(args, str):
            item = {
                "type": "custom_tool_call",
                "id": "ctc_%s_%d" % (index, n),
                "call_id": call_id,
                "name": name,
                "input": args,
                "status": "completed",
            }
        else:
            item = {
                "type": "function_call",
                "id": "fc_%s_%d" % (index, n),
                "call_id": call_id,
                "name": name,
                "arguments": json.dumps(args),
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
        items.append(item)
    return items


class OpenAiResponses:
    def is_model_path(self, path):
        return path.split("?")[0].rstrip("/").endswith("/responses")

    def wants_turn(self, path, body):
        return bool((body or {}).get("tools"))

    def respond(self, h, path, body, turn, index):
        self.stream(h, output_items(turn, index, namespaces_of(body)), index)

    def respond_side(self, h, path, body, text):
        self.stream(h, output_items({"text": text}, "side", {}), "side")

    def stream(self, h, items, index):
        sse = scripted.Sse(h)
        response_id = "resp_%s" % index

        def event(kind, data):
            sse.event(dict(type=kind, **data), name=kind)

        event("response.created", {"response": {"id": response_id, "status": "in_progress"}})
        for n, item in enumerate(items):
            if item["type"] == "message":
                opening = dict(item, status="in_progress", content=[])
                event("response.output_item.added", {"output_index": n, "item": opening})
                event(
                    "response.output_text.delta",
                    {
                        "item_id": item["id"],
                        "output_index": n,
                        "content_index": 0,
                        "delta": item["content"][0]["text"],
                    },
                )
            else:
                event("response.output_item.added", {"output_index": n, "item": item})
            event("response.output_item.done", {"output_index": n, "item": item})
        event(
            "response.completed",
            {
                "response": {
                    "id": response_id,
                    "status": "completed",
                    "usage": {
                        "input_tokens": 10,
                        "input_tokens_details": {"cached_tokens": 0},
                        "output_tokens": 5,
                        "output_tokens_details": {"reasoning_tokens": 0},
                        "total_tokens": 15,
                    },
                }
            },
        )
        sse.end()

    def other(self, h, path, body):
        if path.split("?")[0].rstrip("/").endswith("/models"):
            scripted.send_json(h, 200, {"object": "list", "data": [], "models": []})
        else:
            scripted.send_json(h, 404, {"error": {"message": "not found: " + path}})


if __name__ == "__main__":
    scripted.serve(OpenAiResponses())
