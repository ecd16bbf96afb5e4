"""A stand-in for vLLM's OpenAI-compatible server, for `rwb generate`'s tests and its
benchmark (scripts/bench_generate.py). Standard library only.

It answers `POST /v1/chat/completions` and `POST /v1/completions` with the fields vLLM
answers (vllm-project/vllm: `chat_completion/protocol.py` @ 002032ee2b18, responses
with `choices[].{index, message|text, finish_reason, stop_reason}` and `usage`;
`engine/protocol.py` @ 040a2cc2a629 for error bodies; `server_utils.py` @ 029329a8eded
for the 401 body `{"error": "Unauthorized"}`), and seeds as vLLM's parallel sampling
does (`v1/engine/parallel_sampling.py` @ 003d3ee22261: child `index` of an `n` request
is seeded `seed + index`). The completion text is a function of (prompt, seed): the
same seed gives the same text, whichever request it came in.

Words in the prompt's last user turn (or text) steer it:
  slow           answer after 1.5 s
  long           the completion reaches max_tokens: finish_reason "length"
  tool           a tool call, content null: finish_reason "tool_calls"
  abort-once     the first time, choice 0 is given up: finish_reason "abort"
  fewer-once     the first time, one choice whatever `n` asks
  ratelimit      the first time, 429 with `Retry-After: 1` (a gateway's answer)
  ratelimit-date the first time, 429 with `Retry-After` as an HTTP date 2 s ahead
  flaky          the first two times, 500 with vLLM's older flat error body
  broken         always 503 with `{"error": {"message": ...}}`
  garbage-once   the first time, 200 with an HTML page
  garbage        always 200 with an HTML page (no OpenAI server)
  cutoff-once    the first time, 200 with JSON cut off in the middle
  drop-once      the first time, the connection drops halfway through the body
  too-long       400: the prompt is longer than the model's context

Usage: openai_server.py [--key KEY] [--model NAME] [--latency-ms MS]
Prints `PORT <n>` on stdout once it listens on 127.0.0.1. `GET /stats` gives the
requests seen (`requests`: each one's `path`, `body`, `authorization` and the time
`at` it came);
`POST /stats/reset` forgets them.
"""

import argparse
import email.utils
import hashlib
import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"requests": [], "asked": {}}
LOCK = threading.Lock()
UNSEEDED = itertools.count()


def error_body(message, kind, code, param=None):
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def words(text):
    return len(text.split())


def completion_text(prompt, seed, max_tokens, long):
    if seed is None:
        with LOCK:
            seed = "unseeded-%d" % next(UNSEEDED)
    digest = hashlib.sha256(("%s|%s" % (prompt, seed)).encode()).hexdigest()[:8]
    if long:
        return " ".join(["w%s" % digest[: (i % 8) + 1] for i in range(max_tokens)]), "length"
    text = "The answer is %s (%s)" % (digest, prompt[:20])
    return text, "stop"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "vllm-standin"
    # headers and body go out in two writes: without this, Nagle's algorithm holds the
    # body until the client's delayed ACK (40 ms) on a kept-alive connection
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def send_json(self, status, payload, headers=()):
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def send_raw(self, status, data, content_type="application/json", length=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/stats":
            with LOCK:
                self.send_json(200, {"requests": list(STATE["requests"])})
            return
        self.send_json(404, {"detail": "Not Found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path == "/stats/reset":
            with LOCK:
                STATE["requests"].clear()
                STATE["asked"].clear()
            self.send_json(200, {"ok": True})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with LOCK:
            STATE["requests"].append(
                {
                    "path": self.path,
                    "body": body,
                    "authorization": self.headers.get("Authorization"),
                    "at": time.time(),
                }
            )
        if self.path not in ("/v1/chat/completions", "/v1/completions"):
            self.send_json(404, {"detail": "Not Found"})
            return
        key = self.server.key
        if key is not None and self.headers.get("Authorization") != "Bearer " + key:
            self.send_json(401, {"error": "Unauthorized"})
            return
        if not isinstance(body, dict):
            self.send_json(400, error_body("the body is not a JSON object", "BadRequestError", 400))
            return
        if body.get("model") != self.server.model:
            self.send_json(
                404,
                error_body(
                    "The model `%s` does not exist." % body.get("model"), "NotFoundError", 404, "model"
                ),
            )
            return
        chat = self.path == "/v1/chat/completions"
        if chat:
            users = [m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"]
            prompt = users[-1] if users else ""
        else:
            prompt = body.get("prompt", "")
        n = body.get("n") or 1
        if body.get("temperature") == 0 and n > 1:
            self.send_json(400, error_body("n must be 1 when using greedy sampling, got %d." % n, "BadRequestError", 400))
            return
        with LOCK:
            times = STATE["asked"].get(prompt, 0)
            STATE["asked"][prompt] = times + 1
        tags = set(prompt.split())
        if self.server.latency:
            time.sleep(self.server.latency)
        if "slow" in tags:
            time.sleep(1.5)
        if "too-long" in tags:
            self.send_json(
                400,
                error_body(
                    "This model's maximum context length is 8 tokens. However, you requested 9000 tokens.",
                    "BadRequestError",
                    400,
                ),
            )
            return
        if "ratelimit" in tags and times == 0:
            self.send_json(429, {"error": {"message": "Rate limit reached", "type": "rate_limit", "code": 429}}, [("Retry-After", "1")])
            return
        if "ratelimit-date" in tags and times == 0:
            when = email.utils.formatdate(time.time() + 2.0, usegmt=True)
            self.send_json(429, {"error": {"message": "Rate limit reached", "type": "rate_limit", "code": 429}}, [("Retry-After", when)])
            return
        if "flaky" in tags and times < 2:
            self.send_json(500, {"object": "error", "message": "engine hiccup", "type": "InternalServerError", "param": None, "code": 500})
            return
        if "broken" in tags:
            self.send_json(503, error_body("CUDA out of memory", "ServiceUnavailable", 503))
            return
        if "garbage" in tags or ("garbage-once" in tags and times == 0):
            self.send_raw(200, b"<html><body>Welcome to nginx!</body></html>", "text/html")
            return
        if "cutoff-once" in tags and times == 0:
            self.send_raw(200, b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"ind')
            return
        if "drop-once" in tags and times == 0:
            data = b'{"id": "chatcmpl-1", "object": "chat.completion", "choices": ['
            self.send_raw(200, data, length=len(data) + 500)
            self.wfile.flush()
            self.close_connection = True
            return
        seed = body.get("seed")
        max_tokens = body.get("max_tokens") or 16
        count = 1 if ("fewer-once" in tags and times == 0) else n
        choices = []
        tokens = 0
        for index in range(count):
            child_seed = None if seed is None else seed + index
            text, finish = completion_text(prompt, child_seed, max_tokens, "long" in tags)
            if "abort-once" in tags and times == 0 and index == 0:
                text, finish = "", "abort"
            tokens += words(text)
            if chat:
                message = {"role": "assistant", "content": text, "reasoning": None, "tool_calls": []}
                if "tool" in tags:
                    message["content"] = None
                    message["tool_calls"] = [
                        {"id": "chatcmpl-tool-%d" % index, "type": "function",
                         "function": {"name": "lookup", "arguments": json.dumps({"q": prompt})}}
                    ]
                    finish = "tool_calls"
                choices.append({"index": index, "message": message, "logprobs": None,
                                "finish_reason": finish, "stop_reason": None})
            else:
                choices.append({"index": index, "text": text, "logprobs": None,
                                "finish_reason": finish, "stop_reason": None, "prompt_logprobs": None})
        answer = {
            "id": ("chatcmpl-%d" if chat else "cmpl-%d") % len(STATE["requests"]),
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": self.server.model,
            "choices": choices,
            "usage": {"prompt_tokens": words(prompt), "total_tokens": words(prompt) + tokens,
                      "completion_tokens": tokens, "prompt_tokens_details": None},
        }
        self.send_json(200, answer)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--key")
    parser.add_argument("--model", default="policy")
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    server.key = args.key
    server.model = args.model
    server.latency = args.latency_ms / 1000.0
    print("PORT %d" % server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
