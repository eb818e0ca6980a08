#!/usr/bin/env python3
"""A plain HTTP client for the tests of the fake Google admin backend (firebase_server.py with
google_admin.py): it sends exactly what it is told, so a test can send both what Google documents
and what Google refuses, and reports exactly what came back. Python 3.11 standard library and the
openssl command only.

  google_client.py jwt KEY.pem HEADER_JSON CLAIMS_JSON [--standard-base64]
      prints header.claims.signature, RS256-signed with the PEM private key by `openssl dgst`;
      --standard-base64 encodes every part in standard base64 with padding (what Google refuses)
  google_client.py request METHOD URL [-H "Name: value"]... [--body TEXT]
      prints one JSON object: {"status", "headers" (names lower-cased), "gzip" (whether the body
      came gzip-compressed), "body" (the text, decompressed)}
  google_client.py serve
      the same, many times, without a process start each (tests make dozens of calls): reads one
      JSON object per line from stdin, {"op": "jwt", "key", "header", "claims", "standardBase64"}
      or {"op": "request", "method", "url", "headers": [[name, value]...], "body"}, and answers
      each with one JSON line: {"jwt": "..."}, the request's result, or {"failure": "..."}.
      Ends at the end of stdin.
"""
import base64, gzip, http.client, json, subprocess, sys
from urllib.parse import urlsplit


def encode(data, standard):
    if standard:
        return base64.b64encode(data).decode()
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(key_path, header, claims, standard):
    signing_input = encode(header.encode(), standard) + "." + encode(claims.encode(), standard)
    signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_path], input=signing_input.encode(),
                               capture_output=True, check=True).stdout
    return signing_input + "." + encode(signature, standard)


def request(method, url, headers, body):
    split = urlsplit(url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
    target = split.path + ("?" + split.query if split.query else "")
    # skip_accept_encoding: http.client would otherwise add "Accept-Encoding: identity" itself.
    connection.putrequest(method, target, skip_accept_encoding=True)
    for name, value in headers:
        connection.putheader(name, value)
    data = body.encode() if body is not None else None
    if data is not None:
        connection.putheader("Content-Length", str(len(data)))
    connection.endheaders(data)
    response = connection.getresponse()
    raw = response.read()
    compressed = (response.getheader("Content-Encoding") or "").lower() == "gzip"
    if compressed:
        raw = gzip.decompress(raw)
    return {"status": response.status, "headers": {k.lower(): v for k, v in response.getheaders()},
            "gzip": compressed, "body": raw.decode("utf-8", "replace")}


def serve():
    for line in sys.stdin:
        try:
            command = json.loads(line)
            if command["op"] == "jwt":
                answer = {"jwt": jwt(command["key"], command["header"], command["claims"],
                                     command.get("standardBase64", False))}
            else:
                answer = request(command["method"], command["url"], [tuple(h) for h in command.get("headers", [])],
                                 command.get("body"))
        except Exception as error:  # reported to the test, which fails naming it
            answer = {"failure": "%s: %s" % (type(error).__name__, error)}
        print(json.dumps(answer), flush=True)
    return 0


def main(args):
    if args == ["serve"]:
        return serve()
    if args[:1] == ["jwt"] and len(args) in (4, 5):
        print(jwt(args[1], args[2], args[3], "--standard-base64" in args[4:]))
        return 0
    if args[:1] == ["request"] and len(args) >= 3:
        headers, body, rest = [], None, args[3:]
        while rest:
            if rest[0] == "-H" and len(rest) > 1:
                name, _, value = rest[1].partition(":")
                headers.append((name.strip(), value.strip()))
            elif rest[0] == "--body" and len(rest) > 1:
                body = rest[1]
            else:
                print("google_client.py: unknown argument %r" % rest[0], file=sys.stderr)
                return 64
            rest = rest[2:]
        print(json.dumps(request(args[1], args[2], headers, body)))
        return 0
    print(__doc__, file=sys.stderr)
    return 64


sys.exit(main(sys.argv[1:]))
