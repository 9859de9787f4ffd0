#!/usr/bin/env python3
# A local stub of the OpenAI chat-completions API for the extraction tests, and a webhook receiver.
# Prints its port on stdout, then serves on 127.0.0.1 until killed.
#
# POST /v1/chat/completions: the request's "model" is "<scenario>" or "<scenario>:<tag>"; requests
#   are counted per model. Scenarios: success, truncated, refusal, invalid_json, schema_invalid,
#   rate_limited (429 + retry-after-ms), rate_limited_seconds (429 + Retry-After: 1),
#   rate_limited_long (429 + Retry-After: 600), quota, server_error, flaky (500 then success),
#   context_openai, context_vllm, context_llamacpp, context_llamacpp_500, unauthorized,
#   forbidden (403), hang, no_match, slow (success after 0.3 s, counting how many of the model's
#   requests are open at once).
#   A request whose json_schema is named "match_decision" (the matcher's) gets a match decision
#   instead of an invoice: success links the first candidate of the user message's JSON as
#   same_invoice, no_match answers {"matches": []}, schema_invalid names an unknown document and
#   kind; every error scenario answers as for an extraction.
# GET  /count?model=M          -> {"count": n}
# GET  /peak?model=M           -> {"peak": n}: the most requests for M open at once (slow)
# GET  /last_auth?model=M      -> {"authorization": "..."} of the last request for M
# POST /webhook/<tag>          -> 200 "ok", body recorded; GET /webhook/<tag> -> {"count", "last", "all"}
# POST /events/<tag>?secret=S  -> the status event stream's receiver: checks X-Ingestd-Signature
#   with Python's hmac (sha256 of "<X-Ingestd-Timestamp>.<body>" keyed with S) and records every
#   delivery; 503 while the tag is down. GET /events/<tag> -> {"deliveries": [{"id", "header_id",
#   "type", "document_id", "signature_ok", "age_seconds"}, ...]} in arrival order.
# POST /events_down/<tag>?down=1|0 -> the receiver for <tag> answers 503 (down) or takes events.
import hashlib
import hmac
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse, parse_qs

lock = threading.Lock()
counts = {}
open_now = {}
peaks = {}
auth = {}
hooks = {}
events = {}
events_down = set()

INVOICE = {
    "invoice_number": "INV-1", "invoice_date": "2024-03-15", "due_date": "2024-04-14",
    "supplier_name": "Acme Inc.", "supplier_address": "1 Main St, Springfield",
    "supplier_vat_id": "DE123456789", "customer_name": "Globex", "currency": "EUR",
    "line_items": [{"description": "Widget", "quantity": 2, "unit_price": 50.0, "amount": 100.0}],
    "subtotal": 100.0, "vat_amount": 19.0, "total": 119.0,
    "extraction_successful": True, "confidence": "high", "missing_fields": [],
}


def match_decision(req, scenario):
    """The content of a match decision for a matcher's request."""
    candidates = []
    try:
        user = next(m["content"] for m in req.get("messages", []) if m.get("role") == "user")
        candidates = json.loads(user).get("candidates", [])
    except (StopIteration, ValueError, AttributeError):
        pass
    if scenario == "schema_invalid":
        return {"matches": [{"document_id": "00000000-0000-0000-0000-000000000000", "kind": "cousin",
                             "confidence": 3, "reason": "made up"}]}
    if scenario == "no_match" or not candidates:
        return {"matches": []}
    return {"matches": [{"document_id": candidates[0].get("document_id", ""), "kind": "same_invoice",
                         "confidence": 0.9, "reason": "stub: invoice number, counterparty and total agree"}]}


def completion(content, finish="stop", refusal=None, model="stub-model"):
    return {
        "id": "chatcmpl-stub", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": content, "refusal": refusal}}],
        "usage": {"prompt_tokens": 321, "completion_tokens": 54, "total_tokens": 375},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def receive_event(self, url, raw):
        tag = url.path[len("/events/"):]
        secret = parse_qs(url.query).get("secret", [""])[0].encode()
        with lock:
            if tag in events_down:
                return self.reply(503, {"error": "down"})
        ts = self.headers.get("X-Ingestd-Timestamp", "")
        expected = "sha256=" + hmac.new(secret, ts.encode() + b"." + raw, hashlib.sha256).hexdigest()
        signature_ok = hmac.compare_digest(expected, self.headers.get("X-Ingestd-Signature", ""))
        body = json.loads(raw)
        age = time.time() - int(ts) if ts.isdigit() else None
        with lock:
            events.setdefault(tag, []).append({
                "id": body.get("id"), "header_id": self.headers.get("X-Ingestd-Event-Id", ""),
                "type": body.get("type"), "document_id": body.get("document_id"),
                "signature_ok": signature_ok, "age_seconds": age})
        if not signature_ok:
            return self.reply(401, {"error": "bad signature"})
        return self.reply(200, {"ok": True})

    def do_GET(self):
        url = urlparse(self.path)
        q = parse_qs(url.query)
        model = q.get("model", [""])[0]
        with lock:
            if url.path == "/count":
                return self.reply(200, {"count": counts.get(model, 0)})
            if url.path == "/peak":
                return self.reply(200, {"peak": peaks.get(model, 0)})
            if url.path == "/last_auth":
                return self.reply(200, {"authorization": auth.get(model, "")})
            if url.path.startswith("/webhook/"):
                h = hooks.get(url.path, {"count": 0, "last": None, "all": []})
                return self.reply(200, h)
            if url.path.startswith("/events/"):
                return self.reply(200, {"deliveries": events.get(url.path[len("/events/"):], [])})
        self.reply(404, {"error": "not found"})

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        url = urlparse(self.path)
        if url.path.startswith("/webhook/"):
            with lock:
                h = hooks.setdefault(url.path, {"count": 0, "last": None, "all": []})
                h["count"] += 1
                h["last"] = json.loads(raw)
                h["all"].append(h["last"])
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if url.path.startswith("/events_down/"):
            tag = url.path[len("/events_down/"):]
            with lock:
                if parse_qs(url.query).get("down", ["1"])[0] == "1":
                    events_down.add(tag)
                else:
                    events_down.discard(tag)
            return self.reply(200, {"down": tag in events_down})
        if url.path.startswith("/events/"):
            return self.receive_event(url, raw)
        if url.path != "/v1/chat/completions":
            return self.reply(404, {"error": {"message": "unknown path", "type": "invalid_request_error"}})
        req = json.loads(raw)
        model = req.get("model", "")
        scenario = model.split(":")[0]
        with lock:
            counts[model] = counts.get(model, 0) + 1
            n = counts[model]
            auth[model] = self.headers.get("Authorization", "")
        fmt = req.get("response_format", {})
        if fmt.get("type") != "json_schema" or not fmt.get("json_schema", {}).get("strict"):
            return self.reply(400, {"error": {"message": "stub expects strict json_schema",
                                              "type": "invalid_request_error", "code": None}})
        matching = fmt.get("json_schema", {}).get("name") == "match_decision"
        if scenario == "slow":
            with lock:
                open_now[model] = open_now.get(model, 0) + 1
                peaks[model] = max(peaks.get(model, 0), open_now[model])
            time.sleep(0.3)
            with lock:
                open_now[model] -= 1
            return self.reply(200, completion(json.dumps(INVOICE), model=model))
        ok = scenario in ("success", "no_match") or (scenario == "flaky" and n > 1) or (scenario.startswith("rate_limited") and scenario.endswith("_once") and n > 1)
        if matching and (ok or scenario == "schema_invalid"):
            return self.reply(200, completion(json.dumps(match_decision(req, scenario)), model=model))
        if ok:
            return self.reply(200, completion(json.dumps(INVOICE), model=model))
        if scenario == "truncated":
            return self.reply(200, completion(json.dumps(INVOICE)[:80], finish="length"))
        if scenario == "refusal":
            return self.reply(200, completion(None, refusal="I'm sorry, I cannot help with that."))
        if scenario == "invalid_json":
            return self.reply(200, completion("Sure! Here is the invoice: {invoice_number: INV-1"))
        if scenario == "schema_invalid":
            bad = dict(INVOICE)
            bad["confidence"] = "very high"
            del bad["total"]
            return self.reply(200, completion(json.dumps(bad)))
        if scenario.startswith("rate_limited"):
            body = {"error": {"message": "Rate limit reached for requests", "type": "requests",
                              "param": None, "code": "rate_limit_exceeded"}}
            if scenario.startswith("rate_limited_seconds"):
                return self.reply(429, body, {"Retry-After": "1"})
            if scenario.startswith("rate_limited_long"):
                return self.reply(429, body, {"Retry-After": "600"})
            return self.reply(429, body, {"retry-after-ms": "20", "Retry-After": "1"})
        if scenario == "quota":
            return self.reply(429, {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                                              "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}})
        if scenario in ("server_error", "flaky"):
            return self.reply(500, {"error": {"message": "The server had an error while processing your request.",
                                              "type": "server_error", "param": None, "code": None}})
        if scenario == "context_openai":
            return self.reply(400, {"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
                                              "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
        if scenario == "context_vllm":
            return self.reply(400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens in the messages.",
                                    "type": "BadRequestError", "param": None, "code": 400})
        if scenario == "context_llamacpp":
            return self.reply(400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                                              "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}})
        if scenario == "context_llamacpp_500":
            return self.reply(500, {"error": {"code": 500, "message": "the request exceeds the available context size. try increasing the context size or enable context shift",
                                              "type": "server_error"}})
        if scenario == "unauthorized":
            return self.reply(401, {"error": {"message": "Incorrect API key provided: sk-test***3456. You can find your API key at https://platform.openai.com/account/api-keys.",
                                              "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}})
        if scenario == "forbidden":
            return self.reply(403, {"error": {"message": "Project does not have access to model " + model,
                                              "type": "invalid_request_error", "param": None, "code": "model_not_found"}})
        if scenario == "hang":
            time.sleep(5)
            return self.reply(200, completion(json.dumps(INVOICE)))
        return self.reply(400, {"error": {"message": "unknown scenario " + scenario, "type": "invalid_request_error"}})


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
