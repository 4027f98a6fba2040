"""A stdio MCP server in the Python standard library alone (no SDK: the
tests run where PyPI is not reachable). It answers initialize, ping,
tools/list and tools/call of one tool, "whoami", which says which
interpreter runs it (sys.prefix and sys.executable), so that a test can
tell a venv's interpreter from the one it was made from."""

import json
import sys


def reply(msg_id, result):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": result}) + "\n")
    sys.stdout.flush()


TOOL = {
    "name": "whoami",
    "description": "Says which Python runs this server.",
    "inputSchema": {"type": "object", "properties": {}},
}

for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    msg = json.loads(line)
    method, msg_id = msg.get("method"), msg.get("id")
    if msg_id is None:
        continue  # a notification (notifications/initialized, cancelled)
    if method == "initialize":
        reply(msg_id, {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stdlib-python", "version": "1.0.0"},
        })
    elif method == "ping":
        reply(msg_id, {})
    elif method == "tools/list":
        reply(msg_id, {"tools": [TOOL]})
    elif method == "tools/call":
        text = json.dumps({"prefix": sys.prefix, "executable": sys.executable})
        reply(msg_id, {"content": [{"type": "text", "text": text}], "isError": False})
    else:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                     "error": {"code": -32601, "message": "method not found: " + str(method)}}) + "\n")
        sys.stdout.flush()
