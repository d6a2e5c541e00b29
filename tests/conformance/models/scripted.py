"""The shared core of the scripted model servers of the conformance suite.

A server listens on a fresh loopback port and replays a per-case script: every
request for a model turn (one that offers the model tools) takes the next turn of
the script; a request that offers no tools (titles, summaries, probes an agent
sends on its own) gets the script's `side` text and takes nothing. Past the last
turn a request is refused with HTTP 500 naming the exhaustion, loudly, so a test
never passes on a model that was asked more than it was told to say.

Every request is recorded, one JSON object a line, in the record file:
{"path", "turn" (the index it took, or null), "exhausted", "body"}.

A turn is one of (each API module renders it in its own wire shape):
  {"text": "..."}                           a final answer
  {"tool": "<name>", "input": {...}}        one tool call, the agent's own tool name
  {"tools": [{"tool": ..., "input": ...}]}  several tool calls in one response
  {"hang": true}                            read the request, never answer it

A script with "per_conversation": true serves many conversations at once (the
scale test's concurrent missions): a request takes the turn its own conversation
has reached — the API module's `conversation_step(body)`, the tool results the
request already carries — so the turns are each conversation's, not one queue's.

Usage: <api>.py --script <script.json> --record <requests.jsonl>
The first line on stdout is "listening <base url>". The server exits when its
stdin closes (the test that started it is gone).
"""

import argparse
import http.server
import json
import socketserver
import sys
import threading


class Script:
    def __init__(self, path, record):
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        self.turns = doc.get("turns", [])
        self.per_conversation = bool(doc.get("per_conversation"))
        self.side = doc.get("side", "ok")
        self.next = 0
        self.lock = threading.Lock()
        self.record_path = record
        self.seq = 0

    def take(self, step=None):
        """The next turn's index and turn, or (None, None) when exhausted. Per
        conversation, the turn at `step` (the conversation's own place)."""
        with self.lock:
            if self.per_conversation:
                if step is None or step >= len(self.turns):
                    return None, None
                return step, self.turns[step]
            if self.next >= len(self.turns):
                return None, None
            i = self.next
            self.next += 1
            return i, self.turns[i]

    def record(self, path, body, turn, exhausted):
        with self.lock:
            entry = {
                "seq": self.seq,
                "path": path,
                "turn": turn,
                "exhausted": exhausted,
                "body": body,
            }
            self.seq += 1
            with open(self.record_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(entry) + "\n")


def serve(api):
    """Run the server for `api`, an object with:
      wants_turn(path, body) -> bool   does this request ask for a model turn?
      is_model_path(path) -> bool      is this a generation endpoint at all?
      respond(handler, path, body, turn, index)   write the turn in the wire shape
      respond_side(handler, path, body, text)     write a plain text answer
      other(handler, path, body)       anything else (GET /models, count_tokens...)
    """
    parser = argparse.ArgumentParser()
    parser.add_argument("--script", required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()
    script = Script(args.script, args.record)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *a):
            # The record says what was asked; stderr is kept for what went wrong.
            pass

        def read_body(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return {"_raw": raw.decode("utf-8", "replace")}

        def do_HEAD(self):
            # A reachability probe (Claude Code sends one before its first turn).
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            script.record(self.path, None, None, False)
            api.other(self, self.path, None)

        def do_POST(self):
            body = self.read_body()
            path = self.path
            if not api.is_model_path(path):
                script.record(path, body, None, False)
                api.other(self, path, body)
                return
            if not api.wants_turn(path, body):
                script.record(path, body, None, False)
                api.respond_side(self, path, body, script.side)
                return
            step = api.conversation_step(body) if script.per_conversation else None
            index, turn = script.take(step)
            if turn is None:
                script.record(path, body, None, True)
                sys.stderr.write(
                    "scripted model: SCRIPT EXHAUSTED after %d turns (%s)\n"
                    % (len(script.turns), path)
                )
                send_json(
                    self,
                    500,
                    {
                        "error": {
                            "type": "script_exhausted",
                            "message": "scripted model: script exhausted after %d turns"
                            % len(script.turns),
                        }
                    },
                )
                return
            script.record(path, body, index, False)
            if turn.get("hang"):
                # Hold the connection open until the client gives up on it.
                try:
                    while self.rfile.read(1):
                        pass
                except OSError:
                    pass
                self.close_connection = True
                return
            api.respond(self, path, body, turn, index)

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True
        allow_reuse_address = True

        def handle_error(self, request, client_address):
            # An agent killed mid-request hangs up (the killed-host cases do it on
            # purpose): not an error of the script. Anything else is printed.
            if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
                return
            super().handle_error(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    print("listening http://127.0.0.1:%d" % port, flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # Exit with the test: its end of our stdin closes when it drops us or dies.
    try:
        sys.stdin.buffer.read()
    finally:
        server.shutdown()


def send_json(handler, status, doc):
    data = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
    handler.wfile.flush()


class Sse:
    """A Server-Sent Events response, chunked, closed by `end`."""

    def __init__(self, handler):
        self.h = handler
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

    def _chunk(self, data):
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def event(self, data, name=None):
        text = ""
        if name:
            text += "event: %s\n" % name
        if not isinstance(data, str):
            data = json.dumps(data)
        text += "data: %s\n\n" % data
        self._chunk(text.encode())

    def end(self):
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()


def calls_of(turn):
    """The tool calls of a turn, as [(name, input)]."""
    if "tool" in turn:
        return [(turn["tool"], turn.get("input", {}))]
    return [(c["tool"], c.get("input", {})) for c in turn.get("tools", [])]
