"""The OAuth 2.0 token endpoint for service accounts ("Using OAuth 2.0 for Server to Server
Applications"), as the fake Google backend verifies it: the JWT bearer grant, RS256 signatures
checked with the account's public key, and every claim. Python standard library only: the RSA
verification is RSASSA-PKCS1-v1_5 from RFC 8017, a few lines of modular arithmetic.
"""
import base64, hashlib, json, re

from google_errors import AdminError, grant_error, kind

RC_SCOPE = "https://www.googleapis.com/auth/firebase.remoteconfig"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
CLOUD_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
# Scopes are URLs separated by single spaces; anything else (a comma list, say) is not a scope.
SCOPE_FORM = re.compile(r"^https://www\.googleapis\.com/auth/[a-z0-9._-]+$")
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
# RFC 7515 encodes JWT parts in base64url without padding: no '+', '/' or '='.
BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")
CLOCK_SKEW = 60  # seconds an iat may lie in the future (clocks of client and server differ a little)
# DER of the DigestInfo for SHA-256 that RSASSA-PKCS1-v1_5 puts before the hash (RFC 8017 section 9.2).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")


def der_item(data, pos):
    """One DER TLV at `pos`: (tag, contents, position after it)."""
    tag, length = data[pos], data[pos + 1]
    pos += 2
    if length & 0x80:
        count = length & 0x7F
        length = int.from_bytes(data[pos:pos + count], "big")
        pos += count
    return tag, data[pos:pos + length], pos + length


def rsa_public_key(pem_text):
    """(n, e) of a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) or "RSA PUBLIC KEY" (PKCS#1)."""
    body = "".join(line for line in pem_text.strip().splitlines() if not line.startswith("-----"))
    der = base64.b64decode(body)
    _, outer, _ = der_item(der, 0)
    if "BEGIN PUBLIC KEY" in pem_text:
        _, _, pos = der_item(outer, 0)  # AlgorithmIdentifier
        _, bits, _ = der_item(outer, pos)  # BIT STRING: one byte of unused bits, then RSAPublicKey
        _, outer, _ = der_item(bits[1:], 0)
    _, n, pos = der_item(outer, 0)
    _, e, _ = der_item(outer, pos)
    return int.from_bytes(n, "big"), int.from_bytes(e, "big")


def rs256_valid(public_key, signing_input, signature):
    """RSASSA-PKCS1-v1_5 verification with SHA-256 (RFC 8017 section 8.2.2)."""
    n, e = public_key
    size = (n.bit_length() + 7) // 8
    if len(signature) != size:
        return False
    encoded = pow(int.from_bytes(signature, "big"), e, n).to_bytes(size, "big")
    digest = SHA256_DIGEST_INFO + hashlib.sha256(signing_input).digest()
    return encoded == b"\x00\x01" + b"\xff" * (size - 3 - len(digest)) + b"\x00" + digest


def base64url_part(part, what):
    """Decodes one JWT part, refusing what RFC 7515 forbids there: padding and the standard alphabet."""
    if not part:
        raise grant_error("Invalid JWT: the %s is empty" % what)
    if not BASE64URL.match(part):
        bad = sorted(set(c for c in part if not (c.isalnum() or c in "-_")))
        raise grant_error("Invalid JWT: the %s is not base64url without padding (it contains %s)"
                          % (what, " ".join(repr(c) for c in bad)))
    if len(part) % 4 == 1:
        raise grant_error("Invalid JWT: the %s has an impossible base64url length" % what)
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def json_part(part, what):
    try:
        value = json.loads(base64url_part(part, what).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise grant_error("Invalid JWT: the %s is not a JSON object" % what)
    if not isinstance(value, dict):
        raise grant_error("Invalid JWT: the %s is not a JSON object" % what)
    return value


def verify_token_request(headers, form, account, public, now):
    """Checks a token request as Google's token endpoint documents it (form-encoded JWT bearer
    grant, RS256 JWT signed by the service account, every claim) and returns its scopes. `form`:
    the parsed body; `account`: the key file's fields; `public`: the account's (n, e)."""
    content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise AdminError(400, "the token request must be application/x-www-form-urlencoded, got Content-Type "
                         "%r" % headers.get("Content-Type"), oauth="invalid_request")
    form = form if isinstance(form, dict) else {}
    if "grant_type" not in form:
        raise AdminError(400, "Missing required parameter: grant_type", oauth="invalid_request")
    if form["grant_type"] != JWT_BEARER:
        raise AdminError(400, "Invalid grant_type: %s" % form["grant_type"], oauth="unsupported_grant_type")
    if not form.get("assertion"):
        raise AdminError(400, "Missing required parameter: assertion", oauth="invalid_request")
    parts = form["assertion"].split(".")
    if len(parts) != 3:
        raise grant_error("Invalid JWT: %d dot-separated parts, expected 3 (header.claims.signature)"
                          % len(parts))
    header, claims = json_part(parts[0], "header"), json_part(parts[1], "claim set")
    signature = base64url_part(parts[2], "signature")
    if header.get("alg") != "RS256":
        raise grant_error("Invalid JWT: header alg %r, expected RS256" % header.get("alg"))
    if "typ" in header and header["typ"] != "JWT":
        raise grant_error("Invalid JWT: header typ %r, expected JWT" % header["typ"])
    if "kid" in header and header["kid"] != account.get("private_key_id"):
        raise grant_error("Invalid JWT Signature: header kid %r is not the service account's key"
                          % header["kid"])
    if not rs256_valid(public, (parts[0] + "." + parts[1]).encode("ascii"), signature):
        raise grant_error("Invalid JWT Signature.")
    if claims.get("iss") != account.get("client_email"):
        raise grant_error("Invalid JWT: iss %r is not the service account %r"
                          % (claims.get("iss"), account.get("client_email")))
    if "sub" in claims and claims["sub"] != claims["iss"]:
        raise AdminError(401, "Client is unauthorized to retrieve access tokens using this method "
                         "(sub %r needs domain-wide delegation)" % claims["sub"], oauth="unauthorized_client")
    if claims.get("aud") != account.get("token_uri"):
        raise grant_error("Invalid JWT: aud %r is not the token URL %r"
                          % (claims.get("aud"), account.get("token_uri")))
    iat, exp = claims.get("iat"), claims.get("exp")
    timing = ("Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. "
              "Check your iat and exp values in the JWT claim. ")
    if kind(iat) != "number" or kind(exp) != "number" or int(iat) != iat or int(exp) != exp:
        raise grant_error(timing + "(iat and exp must be integers: iat %r, exp %r)" % (iat, exp))
    if not 0 < exp - iat <= 3600:
        raise grant_error(timing + "(exp - iat = %d s, must be 1-3600)" % (exp - iat))
    if iat > now + CLOCK_SKEW:
        raise grant_error(timing + "(iat is %d s in the future)" % (iat - now))
    if exp <= now:
        raise grant_error(timing + "(the JWT expired %d s ago)" % (now - exp))
    scope = claims.get("scope")
    if not isinstance(scope, str) or not scope.strip():
        raise AdminError(400, "Invalid OAuth scope or ID token audience provided (no scope claim).",
                         oauth="invalid_scope")
    scopes = scope.split(" ")
    for one in scopes:
        if not SCOPE_FORM.match(one):
            raise AdminError(400, "Invalid OAuth scope or ID token audience provided: %r (scopes are "
                             "separated by single spaces)" % one, oauth="invalid_scope")
    if not set(scopes) & {RC_SCOPE, FCM_SCOPE, CLOUD_SCOPE}:
        raise AdminError(400, "Invalid OAuth scope: the scope claim holds neither the Remote Config, FCM nor "
                         "cloud-platform scope", oauth="invalid_scope")
    return scopes
