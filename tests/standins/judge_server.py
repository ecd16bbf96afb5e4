"""A stand-in OpenAI-compatible judge and embeddings server for the graders tests
(tests/graders.rs). Standard library only.

`POST /v1/chat/completions` answers from a fixed table: the first key of ANSWERS found
in the request's last message content decides the assistant's text (its `usage` as a
server gives it). `POST /v1/embeddings` answers each input with the vector of
EMBEDDINGS under its text (unknown text: 400). `ratelimit` in the content is answered
429 once first (Retry-After: 0). `GET /stats` gives every request seen (`path`,
`body`, `authorization`).

Usage: judge_server.py   (prints `PORT <n>` once it listens on 127.0.0.1)
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWERS = {
    "grade-high": '{"result": 0.75}',
    "grade-over": '{"result": 7}',
    "grade-string": '```json\n{"result": "0.25"}\n```',
    "grade-none": "I think it is fine.",
    "label-good": '{"result": "good"}',
    "label-bad": '{"result": "bad"}',
    "label-odd": '{"result": "splendid"}',
    "ratelimit": '{"result": 0.5}',
}

EMBEDDINGS = {
    "the cat sat": [0.1, 0.7, 0.2],
    "a cat was sitting": [0.2, 0.6, 0.3],
    "stock prices fell": [-0.5, -0.1, 0.4],
}

STATE = {"requests": [], "limited": set()}
LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with LOCK:
            self.reply(200, {"requests": STATE["requests"]})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        with LOCK:
            STATE["requests"].append(
                {"path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
            )
        if self.path == "/v1/embeddings":
            data = []
            for i, text in enumerate(body.get("input") or []):
                if text not in EMBEDDINGS:
                    return self.reply(400, {"error": {"message": "no embedding for %r" % text, "type": "invalid_request_error", "param": "input", "code": None}})
                data.append({"object": "embedding", "index": i, "embedding": EMBEDDINGS[text]})
            return self.reply(200, {"object": "list", "data": data, "model": body.get("model"), "usage": {"prompt_tokens": 6, "total_tokens": 6}})
        if self.path != "/v1/chat/completions":
            return self.reply(404, {"error": {"message": "no route " + self.path, "type": "not_found", "param": None, "code": None}})
        content = body["messages"][-1]["content"]
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content)
        if "ratelimit" in content:
            with LOCK:
                first = content not in STATE["limited"]
                STATE["limited"].add(content)
            if first:
                return self.reply(429, {"error": {"message": "slow down", "type": "rate_limit", "param": None, "code": None}}, [("Retry-After", "0")])
        answer = next((text for key, text in ANSWERS.items() if key in content), None)
        if answer is None:
            return self.reply(400, {"error": {"message": "no answer for %r" % content, "type": "invalid_request_error", "param": None, "code": None}})
        self.reply(
            200,
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
            },
        )


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
