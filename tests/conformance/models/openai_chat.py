"""A scripted OpenAI Chat Completions API (POST <base>/chat/completions, streaming
tool calls), for qwen-code and opencode. See scripted.py for the script and the
record.
"""

import time

import scripted


def tool_calls_of(turn, index):
    return [
        {
            "index": n,
            "id": "call_%02d_%02d" % (index, n),
            "type": "function",
            "function": {"name": name, "arguments": scripted.json.dumps(args)},
        }
        for n, (name, args) in enumerate(scripted.calls_of(turn))
    ]


class OpenAiChat:
    def is_model_path(self, path):
        return path.split("?")[0].rstrip("/").endswith("/chat/completions")

    def conversation_step(self, body):
        """How far a conversation has come: the tool results it carries."""
        return sum(1 for m in (body or {}).get("messages", []) if m.get("role") == "tool")

    def wants_turn(self, path, body):
        return bool((body or {}).get("tools"))

    def respond(self, h, path, body, turn, index):
        self.completion(h, body, turn.get("text"), tool_calls_of(turn, index), index)

    def respond_side(self, h, path, body, text):
        self.completion(h, body, text, [], "side")

    def completion(self, h, body, text, calls, index):
        model = (body or {}).get("model", "scripted")
        cid = "chatcmpl-%s" % index
        finish = "tool_calls" if calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not (body or {}).get("stream"):
            message = {"role": "assistant", "content": text}
            if calls:
                message["tool_calls"] = [
                    {k: v for k, v in c.items() if k != "index"} for c in calls
                ]
            scripted.send_json(
                h,
                200,
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                },
            )
            return
        sse = scripted.Sse(h)

        def chunk(delta, finish_reason=None, with_usage=False):
            doc = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            if with_usage:
                doc["usage"] = usage
            sse.event(doc)

        chunk({"role": "assistant", "content": ""})
        if text:
            chunk({"content": text})
        for c in calls:
            chunk({"tool_calls": [c]})
        chunk({}, finish, with_usage=True)
        sse.event("[DONE]")
        sse.end()

    def other(self, h, path, body):
        if path.split("?")[0].rstrip("/").endswith("/models"):
            scripted.send_json(
                h,
                200,
                {"object": "list", "data": [{"id": "scripted-model", "object": "model", "owned_by": "scripted"}]},
            )
        else:
            scripted.send_json(h, 404, {"error": {"message": "not found: " + path}})


if __name__ == "__main__":
    scripted.serve(OpenAiChat())
