#!/usr/bin/env python3
# Document AI stub for integration_ocr_document_ai: checks each request like the real service would
# (bearer token, base64 content, mimeType, ocrConfig flags) and answers by the processor name in
# the path with one of the service's response or error shapes. Writes its port to argv[1] once
# listening.
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = "Bearer test-token-123"

OK = {"document": {"text": "Invoice INV-1\nTotal 1,234.56\n", "pages": [
    {"pageNumber": 1,
     "layout": {"textAnchor": {"textSegments": [{"endIndex": "30"}]}, "orientation": "PAGE_UP"},
     "imageQualityScores": {"qualityScore": 0.78, "detectedDefects": [
         {"type": "quality/defect_glare", "confidence": 0.97},
         {"type": "quality/defect_blurry", "confidence": 0.4}]}}]}}

TRAPS = {"document": {"text": "Seite 1\nSeite 2\n", "pages": [
    {"layout": {"textAnchor": {"textSegments": [{"endIndex": "8"}]}, "orientation": 1},
     "imageQualityScores": {"qualityScore": 0.9}},
    {"pageNumber": "2", "layout": {"textAnchor": {"textSegments": [
        {"startIndex": "8", "endIndex": "16"}]}},
     "imageQualityScores": {"detectedDefects": [{"type": "quality/defect_dark"}]}}]}}

LEGACY = {"document": {"text": "blurry scan", "pages": [{"pageNumber": 1}], "entities": [
    {"type": "quality_score", "confidence": 0.03, "pageAnchor": {"pageRefs": [{}]},
     "properties": [{"type": "quality/defect_blurry", "confidence": 0.96}]}]}}


def error(code, status, message):
    return code, {"error": {"code": code, "message": message, "status": status}}


ROUTES = {
    "ok": lambda: (200, OK),
    "traps": lambda: (200, TRAPS),
    "legacy": lambda: (200, LEGACY),
    "too-large": lambda: error(400, "INVALID_ARGUMENT",
                               "Document size (34381195) exceeds the limit: 20971520."),
    "too-many-pages": lambda: error(400, "INVALID_ARGUMENT",
                                    "Document pages exceed the limit: 30 got 56"),
    "imageless": lambda: error(400, "INVALID_ARGUMENT",
                               "Document pages in non-imageless mode exceed the limit: 15 got 18"),
    "quota": lambda: error(429, "RESOURCE_EXHAUSTED", "Quota exceeded for quota metric"),
    "unavailable": lambda: error(503, "UNAVAILABLE", "The service is currently unavailable."),
    "unauthenticated": lambda: error(401, "UNAUTHENTICATED", "Request had invalid credentials."),
    "forbidden": lambda: error(403, "PERMISSION_DENIED", "Permission denied on processor"),
}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def reply(self, code, body, extra=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        # /v1/projects/p/locations/eu/processors/<name>:process
        name = self.path.rsplit("/", 1)[-1].split(":", 1)[0]
        if self.headers.get("Authorization") != TOKEN and name != "unauthenticated":
            return self.reply(*error(401, "UNAUTHENTICATED", "missing or wrong bearer token"))
        try:
            req = json.loads(raw)
            content = base64.b64decode(req["rawDocument"]["content"], validate=True)
            mime = req["rawDocument"]["mimeType"]
            ocr = req["processOptions"]["ocrConfig"]
            assert ocr["enableNativePdfParsing"] is True
            assert ocr["enableImageQualityScores"] is True
            assert mime in ("application/pdf", "image/png", "image/jpeg", "image/tiff")
            assert len(content) > 0
        except Exception as e:  # the real service answers 400 to a malformed request
            return self.reply(*error(400, "INVALID_ARGUMENT", f"stub rejected request: {e!r}"))
        if name == "garbage":
            return self.reply(200, b"<html>not json")
        if name == "echo-size":
            return self.reply(200, {"document": {"text": f"{mime} {len(content)}"}})
        route = ROUTES.get(name)
        if route is None:
            return self.reply(*error(404, "NOT_FOUND", f"processor {name} not found"))
        code, body = route()
        extra = [("Retry-After", "3")] if code == 429 else []
        return self.reply(code, body, extra)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
