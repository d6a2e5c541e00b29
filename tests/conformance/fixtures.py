"""Turn the ACP frames the conformance suite recorded into fixtures.

Usage: fixtures.py <recording dir> <tests/fixtures/acp>

Reads every <agent>-<case>.jsonl a run with MISSIONBOARD_CONFORMANCE_RECORD=<dir>
left, and writes tests/fixtures/acp/<agent>/recorded/<case>.json: {"origin", "frames"},
where frames are what the agent said that a client must understand — the initialize
and session/new results, every session/request_permission with the answer it got, and
every tool_call / tool_call_update — in the order they crossed the wire. The scratch
directory of the run is replaced by /sandbox, and session/new's request (which carries
the mission token) is never kept.
"""

import json
import os
import re
import sys

KEPT_UPDATES = {"tool_call", "tool_call_update"}


def scrub(value, root):
    text = json.dumps(value)
    if root:
        text = text.replace(root, "/sandbox")
    text = re.sub(r"(/?)tmp/\.tmp[A-Za-z0-9]+", r"\1sandbox", text)
    return json.loads(text)


def extract(path):
    lines = [json.loads(l) for l in open(path, encoding="utf-8") if l.strip()]
    pending = {}  # client request id -> method
    permission_ids = set()
    root = None
    version = None
    frames = []
    for entry in lines:
        frame = entry["frame"]
        method = frame.get("method")
        if entry["dir"] == "client":
            if method and "id" in frame:
                pending[frame["id"]] = method
            if method == "session/new":
                cwd = frame["params"].get("cwd", "")
                root = os.path.dirname(cwd) if cwd else None
            if method is None and frame.get("id") in permission_ids:
                frames.append({"answer": frame})
            continue
        if method is None:
            asked = pending.get(frame.get("id"))
            if asked in ("initialize", "session/new", "session/load"):
                frames.append({"response_to": asked, "frame": frame})
                if asked == "initialize":
                    version = frame.get("result", {}).get("agentInfo", {}).get("version")
            continue
        if method == "session/request_permission":
            permission_ids.add(frame["id"])
            frames.append(frame)
        elif method == "session/update":
            if frame["params"]["update"].get("sessionUpdate") in KEPT_UPDATES:
                frames.append(frame)
    return scrub(frames, root), version


def main():
    src, dest = sys.argv[1], sys.argv[2]
    for name in sorted(os.listdir(src)):
        if not name.endswith(".jsonl"):
            continue
        agent, case = name[: -len(".jsonl")].split("-", 1)
        frames, version = extract(os.path.join(src, name))
        out_dir = os.path.join(dest, agent, "recorded")
        os.makedirs(out_dir, exist_ok=True)
        doc = {
            "origin": "recorded by the conformance suite (tests/conformance, case %s) from %s %s over real ACP against a scripted model"
            % (case, agent, version or "?"),
            "frames": frames,
        }
        with open(os.path.join(out_dir, case + ".json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
        print("%s/%s: %d frames" % (agent, case, len(frames)))


if __name__ == "__main__":
    main()
