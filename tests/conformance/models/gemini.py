"""A scripted Gemini API (POST <base>/<version>/models/<model>:streamGenerateContent,
server-sent events with `alt=sse`; also `:generateContent` and `:countTokens`), for
gemini-cli. See scripted.py for the script and the record.

A request that declares functions takes the next turn; one that does not (gemini-cli's
own probes: next-speaker checks, summaries, titles) gets the script's `side` text —
as JSON `{"next_speaker": "user", ...}` when it asks for a JSON answer, so a probe never
keeps a finished turn going.
"""

import json

import scripted

USAGE = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


def parts_of(turn):
    parts = []
    if turn.get("text"):
        parts.append({"text": turn["text"]})
    for name, args in scripted.calls_of(turn):
        parts.append({"functionCall": {"name": name, "args": args}})
    return parts


def model_of(path):
    tail = path.split("?")[0].rsplit("/", 1)[-1]
    return tail.split(":", 1)[0]


def chunk(path, parts):
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": USAGE,
        "modelVersion": model_of(path),
    }


class Gemini:
    def is_model_path(self, path):
        route = path.split("?")[0]
        return route.endswith(":streamGenerateContent") or route.endswith(":generateContent")

    def wants_turn(self, path, body):
        return any(t.get("functionDeclarations") for t in (body or {}).get("tools") or [])

    def respond(self, h, path, body, turn, index):
        self.answer(h, path, parts_of(turn))

    def respond_side(self, h, path, body, text):
        config = (body or {}).get("generationConfig") or {}
        if config.get("responseMimeType") == "application/json":
            text = json.dumps({"next_speaker": "user", "reasoning": text})
        self.answer(h, path, [{"text": text}])

    def answer(self, h, path, parts):
        if path.split("?")[0].endswith(":streamGenerateContent"):
            sse = scripted.Sse(h)
            sse.event(chunk(path, parts))
            sse.end()
        else:
            scripted.send_json(h, 200, chunk(path, parts))

    def other(self, h, path, body):
        route = path.split("?")[0]
        if route.endswith(":countTokens"):
            scripted.send_json(h, 200, {"totalTokens": 10})
        elif route.rstrip("/").endswith("/models"):
            scripted.send_json(h, 200, {"models": []})
        else:
            scripted.send_json(h, 404, {"error": {"code": 404, "message": "not found: " + path}})


if __name__ == "__main__":
    scripted.serve(Gemini())
