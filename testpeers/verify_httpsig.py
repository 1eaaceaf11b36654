#!/usr/bin/python3
"""Verify one signed HTTP request with Debian's python3-httpsig (HeaderVerifier).

Run with the system interpreter (/usr/bin/python3), which is the one that sees Debian's package.
Input on stdin: the same JSON object as verify.mjs takes
  {"method", "url" (full URL or path), "headers" (lower-cased name -> value or list of values),
   "body" (text) or "bodyBase64", "publicKeyPem"}.
Output: one JSON line {"lib": "httpsig", "ok": bool, "error": str|null}.
Exit status: 0 accepted, 1 rejected, 2 unusable input.
httpsig never looks at the body, so Digest is checked here against the body with hashlib,
as a server using it would.
"""
import base64
import hashlib
import json
import sys
from urllib.parse import urlsplit

from httpsig.verify import HeaderVerifier


def normalise(raw):
    """Returns (method, path, headers, body bytes, pem) or raises ValueError."""
    if not isinstance(raw, dict):
        raise ValueError("input is not a JSON object")
    for k in ("method", "url", "publicKeyPem"):
        if not isinstance(raw.get(k), str) or not raw[k]:
            raise ValueError("input.%s missing" % k)
    if not isinstance(raw.get("headers"), dict):
        raise ValueError("input.headers missing")
    headers = {}
    for k, v in raw["headers"].items():
        headers[k.lower()] = ", ".join(map(str, v)) if isinstance(v, list) else str(v)
    url = raw["url"]
    if url.startswith("/"):
        path = url
    else:
        u = urlsplit(url)
        path = u.path + ("?" + u.query if u.query else "")
        headers.setdefault("host", u.netloc)
    if isinstance(raw.get("bodyBase64"), str):
        body = base64.b64decode(raw["bodyBase64"])
    else:
        body = (raw.get("body") or "").encode("utf-8")
    return raw["method"].upper(), path, headers, body, raw["publicKeyPem"]


def check_digest(method, headers, body):
    """Raises ValueError unless Digest matches the body (required for a request with a body)."""
    d = headers.get("digest")
    if d is None:
        if body or method == "POST":
            raise ValueError("no Digest header for a request with a body")
        return
    saw256 = False
    for part in d.split(","):
        alg, sep, val = part.partition("=")
        if not sep:
            raise ValueError("malformed Digest %r" % d)
        fn = {"sha-256": hashlib.sha256, "sha-512": hashlib.sha512}.get(alg.strip().lower())
        if fn is None:
            continue
        want = base64.b64encode(fn(body).digest()).decode()
        if val.strip() != want:
            raise ValueError("Digest %s mismatch: header %s, body %s" % (alg.strip(), val.strip(), want))
        if alg.strip().lower() == "sha-256":
            saw256 = True
    if not saw256:
        raise ValueError("Digest has no SHA-256: %r" % d)


def main():
    try:
        method, path, headers, body, pem = normalise(json.loads(sys.stdin.read()))
    except Exception as e:  # any unusable input is a usage error, not a verdict
        print(json.dumps({"lib": "input", "ok": False, "error": str(e)}))
        return 2
    required = ["(request-target)", "host", "date"]
    if body or method == "POST":
        required.append("digest")
    error = None
    try:
        check_digest(method, headers, body)
        v = HeaderVerifier(headers, pem.encode(), required_headers=required,
                           method=method, path=path, sign_header="signature")
        if not v.verify():
            error = "signature: HeaderVerifier.verify returned False"
    except Exception as e:
        error = "%s: %s" % (type(e).__name__, e)
    print(json.dumps({"lib": "httpsig", "ok": error is None, "error": error}))
    return 0 if error is None else 1


if __name__ == "__main__":
    sys.exit(main())
