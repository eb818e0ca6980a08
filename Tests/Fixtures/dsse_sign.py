#!/usr/bin/env python3
"""A DSSE signer that is not rcagent's: builds the payload and DSSE's pre-authentication encoding
here and has the openssl CLI sign it (`openssl pkeyutl -sign -rawin`, Ed25519), for the interop
tests and the fuzz corpus.

    dsse_sign.py --key KEY.pem [--key KEY2.pem] --version N --expires ISO8601 DOC.json [--url-safe]
                 [--keyid TEXT] [--payload-type T]

Prints the envelope on stdout. --raw-payload FILE signs FILE's bytes as the payload as they are.
"""
import argparse
import base64
import json
import subprocess
import sys
import tempfile

PAYLOAD_TYPE = "application/vnd.rcagent.config+json"


def pae(payload_type: bytes, body: bytes) -> bytes:
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(body), body)


def sign(key: str, message: bytes) -> bytes:
    with tempfile.NamedTemporaryFile() as data:
        data.write(message)
        data.flush()
        return subprocess.run(
            ["openssl", "pkeyutl", "-sign", "-rawin", "-inkey", key, "-in", data.name],
            check=True, capture_output=True).stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", action="append", required=True)
    parser.add_argument("--version", type=int)
    parser.add_argument("--expires")
    parser.add_argument("--url-safe", action="store_true")
    parser.add_argument("--keyid", default="")
    parser.add_argument("--payload-type", default=PAYLOAD_TYPE)
    parser.add_argument("--raw-payload")
    parser.add_argument("document", nargs="?")
    args = parser.parse_args()
    if args.raw_payload:
        with open(args.raw_payload, "rb") as f:
            payload = f.read()
    else:
        with open(args.document, "rb") as f:
            document = json.load(f)
        payload = json.dumps({"version": args.version, "expires": args.expires, "document": document},
                             separators=(",", ":")).encode()
    encode = base64.urlsafe_b64encode if args.url_safe else base64.b64encode
    message = pae(args.payload_type.encode(), payload)
    signatures = [{"keyid": args.keyid, "sig": encode(sign(key, message)).decode()} for key in args.key]
    if args.url_safe:
        for s in signatures:
            s["sig"] = s["sig"].rstrip("=")
    envelope = {"payloadType": args.payload_type, "payload": encode(payload).decode().rstrip("=" if args.url_safe else ""),
                "signatures": signatures}
    sys.stdout.write(json.dumps(envelope) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
