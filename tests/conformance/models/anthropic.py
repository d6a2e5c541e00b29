"""A scripted Anthropic Messages API (POST /v1/messages, streaming tool use).

Claude Code (through claude-agent-acp) reaches it with ANTHROPIC_BASE_URL set to the
server's base URL. See scripted.py for the script and the record.
"""

import scripted


def usage():
    return {"input_tokens": 10, "output_tokens": 5}


def blocks_of(turn, index):
    blocks = []
    if "text" in turn:
        blocks.append({"type": "text", "text": turn["text"]})
    for n, (name, args) in enumerate(scripted.calls_of(turn)):
        blocks.append(
            {
                "type": "tool_use",
                "id": "toolu_%02d_%02d" % (index, n),
                "name": name,
                "input": args,
            }
        )
    return blocks


class Anthropic:
    def is_model_path(self, path):
        return path.split("?")[0].rstrip("/").endswith("/messages")

    def wants_turn(self, path, body):
        return bool((body or {}).get("tools"))

    def respond(self, h, path, body, turn, index):
        self.message(h, body, blocks_of(turn, index), "msg_%02d" % index)

    def respond_side(self, h, path, body, text):
        self.message(h, body, [{"type": "text", "text": text}], "msg_side")

    def message(self, h, body, blocks, msg_id):
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        model = (body or {}).get("model", "scripted")
        if not (body or {}).get("stream"):
            scripted.send_json(
                h,
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage(),
                },
            )
            return
        sse = scripted.Sse(h)
        sse.event(
            {
                "type": "message_start",
                "message": {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
            "message_start",
        )
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = dict(block, input={})
                delta = {
                    "type": "input_json_delta",
                    "partial_json": scripted.json.dumps(block["input"]),
                }
            sse.event(
                {"type": "content_block_start", "index": i, "content_block": start},
                "content_block_start",
            )
            sse.event(
                {"type": "content_block_delta", "index": i, "delta": delta},
                "content_block_delta",
            )
            sse.event({"type": "content_block_stop", "index": i}, "content_block_stop")
        sse.event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
            "message_delta",
        )
        sse.event({"type": "message_stop"}, "message_stop")
        sse.end()

    def other(self, h, path, body):
        if "count_tokens" in path:
            scripted.send_json(h, 200, {"input_tokens": 10})
        elif path.split("?")[0].rstrip("/").endswith("/models"):
            scripted.send_json(
                h,
                200,
                {
                    "data": [
                        {
                            "type": "model",
                            "id": "claude-sonnet-4-5",
                            "display_name": "Claude Sonnet 4.5",
                            "created_at": "2025-01-01T00:00:00Z",
                        }
                    ],
                    "has_more": False,
                    "first_id": "claude-sonnet-4-5",
                    "last_id": "claude-sonnet-4-5",
                },
            )
        else:
            scripted.send_json(
                h, 404, {"type": "error", "error": {"type": "not_found_error", "message": path}}
            )


if __name__ == "__main__":
    scripted.serve(Anthropic())
