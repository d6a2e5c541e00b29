"""Run an ACP agent and record every JSON-RPC frame between it and its client.

Usage: acp_tap.py <frames.jsonl> <program> [args...]

Stdin is copied to the agent and the agent's stdout to ours, line by line, as is;
each line is also appended to <frames.jsonl> as {"dir": "client"|"agent", "frame": …}.
The agent is this process's child; its exit status is ours. Used only to record the
fixtures under tests/fixtures/acp/ (MISSIONBOARD_CONFORMANCE_RECORD), never in a case.
"""

import json
import os
import signal
import subprocess
import sys
import threading

log_path, program = sys.argv[1], sys.argv[2:]
lock = threading.Lock()


def record(direction, line):
    try:
        frame = json.loads(line)
    except ValueError:
        frame = {"_unparsed": line.decode("utf-8", "replace")}
    with lock, open(log_path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"dir": direction, "frame": frame}) + "\n")


child = subprocess.Popen(program, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, lambda s, _f: child.send_signal(s))


def to_agent():
    for line in sys.stdin.buffer:
        record("client", line)
        try:
            child.stdin.write(line)
            child.stdin.flush()
        except OSError:
            break
    try:
        child.stdin.close()
    except OSError:
        pass


threading.Thread(target=to_agent, daemon=True).start()
for line in child.stdout:
    record("agent", line)
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(child.wait() & 0xFF)
