#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A stub OpenAI-compatible chat-completions server for corral's runner tests.

usage: stub_openai.py REPLIES.json LOG.jsonl
Serves POST /v1/chat/completions on 127.0.0.1:<ephemeral>, answering request n with
REPLIES[n] (an OpenAI "message" object; tool call arguments as JSON strings), and appends
each request's path, headers and body to LOG.jsonl. Prints the port on stdout, then serves
until killed.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

replies = json.load(open(sys.argv[1]))
log_path = sys.argv[2]
count = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        global count
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with open(log_path, "a") as log:
            log.write(json.dumps({"path": self.path, "headers": dict(self.headers.items()),
                                  "body": body.decode("utf-8", "replace")}) + "\n")
        if self.path != "/v1/chat/completions" or count >= len(replies):
            self.send_response(404)
            self.end_headers()
            return
        message = replies[count]
        count += 1
        out = json.dumps({
            "id": "chatcmpl-%d" % count, "object": "chat.completion", "model": "stub",
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 100 + count, "completion_tokens": 10 + count, "total_tokens": 110 + 2 * count},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
