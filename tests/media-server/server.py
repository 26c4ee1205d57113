#!/usr/bin/env python3
"""An OpenAI-compatible media server with real engines, for gg's media tests.

- POST /v1/audio/speech: espeak-ng (Debian) speaks `input`; only `response_format: "wav"`.
- POST /v1/audio/transcriptions: PocketSphinx (PyPI `pocketsphinx`, whose wheel ships the en-US
  acoustic model, dictionary and language model) transcribes an uploaded WAV file.
- POST /v1/images/generations: Pillow draws the prompt into a PNG of the asked size (there is no
  small image model here: the client is what these tests exercise).

Everything else, and every bad request, is answered in the OpenAI API's error shape
`{"error": {"message", "type", "param", "code"}}`. With `--key K` every request must carry
`Authorization: Bearer K` (401 otherwise). The port is printed on the first line of stdout.

Run: python3 server.py [--key K] [--port 0]
"""

import argparse
import base64
import email.parser
import email.policy
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# espeak-ng's Klatt voice at 230 words a minute and pitch 70 is what PocketSphinx's en-US model
# understands best of the voices tried: measured on five phrases ("open the pod bay doors", "the
# quick brown fox jumps over the lazy dog", "please call me tomorrow morning", "the meeting
# starts at nine", "send the report to the team"), 27 of their 31 words came back; espeak-ng's
# default voice gave 1 of 5 for the first phrase.
ESPEAK_VOICE = "en-us+klatt2"
ESPEAK_SPEED = "230"
ESPEAK_PITCH = "70"

MAX_BODY = 30 * 1024 * 1024

_decoder_lock = threading.Lock()
_decoder = None


def decoder():
    global _decoder
    if _decoder is None:
        from pocketsphinx import Decoder

        _decoder = Decoder(samprate=16000)
    return _decoder


class ApiError(Exception):
    def __init__(self, status, message, param=None, kind="invalid_request_error", code=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.kind = kind
        self.code = code


def speak(body):
    text = body.get("input")
    if not isinstance(text, str) or not text.strip():
        raise ApiError(400, "'input' is required and must be a non-empty string", "input")
    if len(text) > 4096:
        raise ApiError(400, "'input' is longer than 4096 characters", "input")
    fmt = body.get("response_format", "mp3")
    if fmt != "wav":
        raise ApiError(
            400, f"response_format '{fmt}' is not supported by this server (only 'wav')",
            "response_format")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "speech.wav")
        subprocess.run(
            ["espeak-ng", "-v", ESPEAK_VOICE, "-s", ESPEAK_SPEED, "-p", ESPEAK_PITCH, "-w", out,
             "--", text],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out, "rb") as f:
            return f.read()


def pcm16k(wav_bytes):
    """The WAV file's samples as 16 kHz mono 16-bit PCM, which the acoustic model expects."""
    try:
        w = wave.open(io.BytesIO(wav_bytes))
    except (wave.Error, EOFError) as e:
        raise ApiError(400, f"Invalid file format: not a WAV file ({e})", "file")
    if w.getsampwidth() != 2:
        raise ApiError(400, "Invalid file format: only 16-bit WAV is supported", "file")
    raw = w.readframes(w.getnframes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import audioop

        if w.getnchannels() == 2:
            raw = audioop.tomono(raw, 2, 0.5, 0.5)
        elif w.getnchannels() != 1:
            raise ApiError(400, "Invalid file format: mono or stereo WAV only", "file")
        if w.getframerate() != 16000:
            raw, _ = audioop.ratecv(raw, 2, 1, w.getframerate(), 16000, None)
    # Half a second of silence either side: the decoder's start and end detection needs it.
    pad = b"\0\0" * 8000
    return pad + raw + pad


def transcribe(fields, files):
    if "file" not in files:
        raise ApiError(400, "'file' is required", "file")
    name, data = files["file"]
    if not fields.get("model"):
        raise ApiError(400, "'model' is required", "model")
    if not name.lower().endswith(".wav"):
        raise ApiError(
            400, f"Invalid file format. Supported formats: ['wav'] (got {name!r})", "file")
    pcm = pcm16k(data)
    with _decoder_lock:
        d = decoder()
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        hyp = d.hyp()
        text = hyp.hypstr if hyp is not None else ""
    return {"text": text}


def draw(prompt, size):
    from PIL import Image, ImageDraw

    image = Image.new("RGB", size, (24, 32, 48))
    pen = ImageDraw.Draw(image)
    words, lines, line = prompt.split(), [], ""
    for word in words:
        if len(line) + len(word) > 40 and line:
            lines.append(line)
            line = ""
        line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    for i, text in enumerate(lines[:20]):
        pen.text((16, 16 + 14 * i), text, fill=(240, 220, 120))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def generate(body):
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ApiError(400, "'prompt' is required", "prompt")
    n = body.get("n", 1)
    if not isinstance(n, int) or not 1 <= n <= 4:
        raise ApiError(400, "'n' must be between 1 and 4", "n")
    size = body.get("size") or "256x256"
    try:
        w, h = (int(x) for x in size.split("x"))
    except ValueError:
        raise ApiError(400, f"Invalid value for 'size': {size!r}", "size")
    if not (16 <= w <= 2048 and 16 <= h <= 2048):
        raise ApiError(400, f"Invalid value for 'size': {size!r}", "size")
    if body.get("response_format", "url") != "b64_json":
        raise ApiError(400, "this server only answers response_format 'b64_json'",
                       "response_format")
    data = [{"b64_json": base64.b64encode(draw(prompt, (w, h))).decode(),
             "revised_prompt": prompt} for _ in range(n)]
    return {"created": 0, "data": data}


def parse_multipart(content_type, body):
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    if not message.is_multipart():
        raise ApiError(400, "expected multipart/form-data")
    fields, files = {}, {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        payload = part.get_payload(decode=True) or b""
        if filename is not None:
            files[name] = (filename, payload)
        else:
            fields[name] = payload.decode("utf-8", "replace")
    return fields, files


class Handler(BaseHTTPRequestHandler):
    key = None
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        sys.stderr.write("media-server: " + fmt % args + "\n")

    def reply(self, status, body, content_type="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def error(self, e):
        body = {"error": {"message": e.message, "type": e.kind, "param": e.param, "code": e.code}}
        self.reply(e.status, json.dumps(body).encode())

    def do_GET(self):
        self.error(ApiError(404, f"Unknown request URL: GET {self.path}", code="unknown_url"))

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length", "0"))
            if length > MAX_BODY:
                raise ApiError(413, "request body too large", kind="invalid_request_error")
            body = self.rfile.read(length)
            if self.key is not None and self.headers.get("Authorization") != f"Bearer {self.key}":
                raise ApiError(401, "Incorrect API key provided.", kind="invalid_request_error",
                               code="invalid_api_key")
            content_type = self.headers.get("Content-Type", "")
            if self.path == "/v1/audio/transcriptions":
                fields, files = parse_multipart(content_type, body)
                self.reply(200, json.dumps(transcribe(fields, files)).encode())
                return
            try:
                request = json.loads(body or b"{}")
            except ValueError:
                raise ApiError(400, "We could not parse the JSON body of your request.")
            if self.path == "/v1/audio/speech":
                self.reply(200, speak(request), "audio/wav")
            elif self.path == "/v1/images/generations":
                self.reply(200, json.dumps(generate(request)).encode())
            else:
                raise ApiError(404, f"Unknown request URL: POST {self.path}", code="unknown_url")
        except ApiError as e:
            self.error(e)
        except Exception as e:  # noqa: BLE001 - a server error, in the API's shape
            self.error(ApiError(500, f"internal error: {e}", kind="server_error"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--key")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    Handler.key = args.key
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
