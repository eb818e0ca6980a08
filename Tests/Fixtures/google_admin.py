"""Google's admin APIs for the fake Firebase backend (firebase_server.py): the OAuth 2.0 token
endpoint of a service account, Remote Config REST v1 and FCM HTTP v1 send, written from Google's
public documentation. firebase_server.py routes requests here, logs them and writes the answers;
its docstring lists every mode key and file this module reads or writes.

Everything is checked the way the documentation describes it, so a client that passes here speaks
the protocol Google documents: RS256 JWTs in base64url without padding, form-encoded token
requests, bearer tokens with the right scope, ETags only for clients that accept gzip, If-Match on
every publish, and FCM messages within the documented target, key and size rules.
"""
import base64, datetime, gzip, hashlib, json, os, re, secrets, threading, time

RC_SCOPE = "https://www.googleapis.com/auth/firebase.remoteconfig"
FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
CLOUD_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
SCOPE_FORM = re.compile(r"^https://www\.googleapis\.com/auth/[a-z0-9._-]+$")
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
BASE64URL = re.compile(r"^[A-Za-z0-9_-]+$")
CLOCK_SKEW = 60  # seconds an iat may lie in the future (clocks of client and server differ a little)
# DER of the DigestInfo for SHA-256 that RSASSA-PKCS1-v1_5 puts before the hash (RFC 8017 section 9.2).
SHA256_DIGEST_INFO = bytes.fromhex("3031300d060960864801650304020105000420")

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ABORTED", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
                503: "UNAVAILABLE"}
FCM_ERROR_CODES = {400: "INVALID_ARGUMENT", 403: "SENDER_ID_MISMATCH", 404: "UNREGISTERED", 429: "QUOTA_EXCEEDED",
                   500: "INTERNAL", 503: "UNAVAILABLE"}
OAUTH_FORCED_ERRORS = {401: "invalid_client", 429: "rate_limit_exceeded"}  # 5xx: internal_failure

NAMESPACE = r"(?:/namespaces/([^/:]+))?"
ROUTES = [
    ("oauth-token", "POST", re.compile(r"^/token$")),
    ("rc-get", "GET", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig$")),
    ("rc-put", "PUT", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig$")),
    ("rc-versions", "GET", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig:listVersions$")),
    ("rc-rollback", "POST", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig:rollback$")),
    ("fcm-send", "POST", re.compile(r"^/v1/projects/([^/:]+)/messages:send$")),
]
# The names a test may use in "adminFailures" for each API (the short ones the brief of the fake
# offered, and the log's names).
FAILURE_NAMES = {"oauth-token": {"token", "oauth-token"}, "rc-get": {"rc-get"}, "rc-put": {"rc-put"},
                 "rc-versions": {"versions", "rc-versions"}, "rc-rollback": {"rollback", "rc-rollback"},
                 "fcm-send": {"fcm", "fcm-send"}}

VALUE_TYPES = {"STRING", "BOOLEAN", "NUMBER", "JSON"}
TAG_COLORS = {"BLUE", "BROWN", "CYAN", "DEEP_ORANGE", "GREEN", "INDIGO", "LIME", "ORANGE", "PINK", "PURPLE", "TEAL",
              "CONDITION_DISPLAY_COLOR_UNSPECIFIED"}
PARAMETER_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
TOPIC = re.compile(r"^[a-zA-Z0-9-_.~%]+$")
ANALYTICS_LABEL = re.compile(r"^[a-zA-Z0-9-_.~%]{1,50}$")
DURATION = re.compile(r"^[0-9]+(\.[0-9]{1,9})?s$")
KEPT_VERSIONS = 300  # Remote Config keeps the newest 300 versions of each template


class AdminError(Exception):
    """An error answer. `oauth`: the token endpoint's error code (its body is
    {"error", "error_description"}); otherwise Google's envelope {"error": {code, message, status}}."""

    def __init__(self, status, message, google_status=None, oauth=None, details=None, headers=None, forced=False):
        super().__init__(message)
        self.status, self.message, self.oauth, self.details = status, message, oauth, details
        self.google_status = google_status or STATUS_NAMES.get(status, "UNKNOWN")
        self.headers, self.forced = headers or {}, forced

    def body(self):
        if self.oauth:
            return {"error": self.oauth, "error_description": self.message}
        error = {"code": self.status, "message": self.message, "status": self.google_status}
        if self.details:
            error["details"] = self.details
        return {"error": error}


def invalid(message):
    return AdminError(400, message)


def grant_error(message):
    return AdminError(400, message, oauth="invalid_grant")


def kind(value):
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "array", str: "string", type(None): "null"}.get(type(value), "number")


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text, name):
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise invalid("query parameter %s=%r is not an RFC 3339 time" % (name, text))


def unknown_query(name):
    return invalid("Invalid JSON payload received. Unknown name \"%s\": Cannot bind query parameter. Field '%s' "
                   "could not be found in request message." % (name, name))


def unknown_field(name, where):
    return invalid("Invalid JSON payload received. Unknown name \"%s\" at '%s': Cannot find field." % (name, where))


def bool_query(query, names):
    value = None
    for name in names:
        if name in query:
            if query[name] not in ("true", "false"):
                raise invalid("query parameter %s must be true or false, got %r" % (name, query[name]))
            value = query[name] == "true"
    return bool(value)


# --- RS256 --------------------------------------------------------------------------------------

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


# --- templates ----------------------------------------------------------------------------------

def check_value(value, where, value_type):
    """One RemoteConfigParameterValue: exactly one of value, useInAppDefault, rolloutValue,
    personalizationValue. A static value must read as its parameter's valueType."""
    if not isinstance(value, dict):
        raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (where, kind(value)))
    for name in value:
        if name not in ("value", "useInAppDefault", "rolloutValue", "personalizationValue"):
            raise unknown_field(name, where)
    if len(value) != 1:
        raise invalid("[VALIDATION_ERROR]: %s must have exactly one of value, useInAppDefault, rolloutValue, "
                      "personalizationValue; it has %s" % (where, ", ".join(sorted(value)) or "none"))
    if "value" in value:
        text = value["value"]
        if not isinstance(text, str):
            raise invalid("[VALIDATION_ERROR]: %s.value must be a string, got %s" % (where, kind(text)))
        check_typed(text, where + ".value", value_type)
        return len(text)
    if "useInAppDefault" in value:
        if value["useInAppDefault"] is not True:
            raise invalid("[VALIDATION_ERROR]: %s.useInAppDefault must be true" % where)
        return 0
    if "rolloutValue" in value:
        rollout = value["rolloutValue"]
        if not isinstance(rollout, dict):
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue must be an object" % where)
        for name in rollout:
            if name not in ("rolloutId", "value", "percent"):
                raise unknown_field(name, where + ".rolloutValue")
        if not isinstance(rollout.get("rolloutId"), str) or not rollout["rolloutId"]:
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.rolloutId must be a non-empty string" % where)
        if not isinstance(rollout.get("value"), str):
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.value must be a string" % where)
        percent = rollout.get("percent", 0)
        if kind(percent) != "number" or not 0 <= percent <= 100:
            raise invalid("[VALIDATION_ERROR]: %s.rolloutValue.percent must be a number 0-100" % where)
        check_typed(rollout["value"], where + ".rolloutValue.value", value_type)
        return len(rollout["value"])
    personalization = value["personalizationValue"]
    if not isinstance(personalization, dict) or not isinstance(personalization.get("personalizationId"), str):
        raise invalid("[VALIDATION_ERROR]: %s.personalizationValue must be an object with a personalizationId"
                      % where)
    return 0


def check_typed(text, where, value_type):
    if value_type == "NUMBER":
        try:
            float(text)
        except ValueError:
            raise invalid("[VALIDATION_ERROR]: %s %r is not a number (valueType NUMBER)" % (where, text))
    elif value_type == "BOOLEAN" and text not in ("true", "false"):
        raise invalid("[VALIDATION_ERROR]: %s %r is not true or false (valueType BOOLEAN)" % (where, text))
    elif value_type == "JSON":
        try:
            json.loads(text)
        except ValueError:
            raise invalid("[VALIDATION_ERROR]: %s is not valid JSON (valueType JSON)" % where)


def check_parameters(parameters, where, conditions, seen):
    if not isinstance(parameters, dict):
        raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (where, kind(parameters)))
    size = 0
    for key, parameter in parameters.items():
        here = "%s.%s" % (where, key)
        if not PARAMETER_KEY.match(key) or len(key) > 256:
            raise invalid("[VALIDATION_ERROR]: parameter key %r must start with a letter or _, hold only letters, "
                          "digits and _, and be at most 256 characters" % key)
        if key in seen:
            raise invalid("[VALIDATION_ERROR]: parameter key %r is used more than once (%s and %s): keys must be "
                          "unique across the template and its parameter groups" % (key, seen[key], here))
        seen[key] = here
        if not isinstance(parameter, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object, got %s" % (here, kind(parameter)))
        for name in parameter:
            if name not in ("defaultValue", "conditionalValues", "description", "valueType"):
                raise unknown_field(name, here)
        value_type = parameter.get("valueType", "STRING")
        if value_type not in VALUE_TYPES:
            raise invalid("[VALIDATION_ERROR]: %s.valueType %r is not one of %s"
                          % (here, value_type, ", ".join(sorted(VALUE_TYPES))))
        if "description" in parameter and not isinstance(parameter["description"], str):
            raise invalid("[VALIDATION_ERROR]: %s.description must be a string" % here)
        if "defaultValue" in parameter:
            size += check_value(parameter["defaultValue"], here + ".defaultValue", value_type)
        conditional = parameter.get("conditionalValues", {})
        if not isinstance(conditional, dict):
            raise invalid("[VALIDATION_ERROR]: %s.conditionalValues must be an object" % here)
        for name, value in conditional.items():
            if name not in conditions:
                raise invalid("[VALIDATION_ERROR]: %s.conditionalValues names condition %r, which the template's "
                              "conditions do not define" % (here, name))
            size += check_value(value, "%s.conditionalValues.%s" % (here, name), value_type)
    return size


def check_template(template, where="template"):
    """Validates a template as the REST reference and quotas page describe it; returns it as it
    is stored (without version) and the input version description (or None)."""
    if not isinstance(template, dict):
        raise invalid("[VALIDATION_ERROR]: the %s must be a JSON object" % where)
    for name in template:
        if name not in ("conditions", "parameters", "parameterGroups", "version"):
            raise unknown_field(name, where)
    conditions = template.get("conditions", [])
    if not isinstance(conditions, list):
        raise invalid("[VALIDATION_ERROR]: conditions must be an array, got %s" % kind(conditions))
    if len(conditions) > 2000:
        raise invalid("[VALIDATION_ERROR]: %d conditions, at most 2000 allowed" % len(conditions))
    names = set()
    for index, condition in enumerate(conditions):
        here = "conditions[%d]" % index
        if not isinstance(condition, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object" % here)
        for name in condition:
            if name not in ("name", "expression", "tagColor"):
                raise unknown_field(name, here)
        name = condition.get("name")
        if not isinstance(name, str) or not name:
            raise invalid("[VALIDATION_ERROR]: %s.name must be a non-empty string" % here)
        if name in names:
            raise invalid("[VALIDATION_ERROR]: condition name %r is used more than once" % name)
        names.add(name)
        if not isinstance(condition.get("expression"), str) or not condition["expression"]:
            raise invalid("[VALIDATION_ERROR]: %s.expression must be a non-empty string" % here)
        if "tagColor" in condition and condition["tagColor"] not in TAG_COLORS:
            raise invalid("[VALIDATION_ERROR]: %s.tagColor %r is not a known color" % (here, condition["tagColor"]))
    seen = {}
    size = check_parameters(template.get("parameters", {}), "parameters", names, seen)
    groups = template.get("parameterGroups", {})
    if not isinstance(groups, dict):
        raise invalid("[VALIDATION_ERROR]: parameterGroups must be an object, got %s" % kind(groups))
    for group_name, group in groups.items():
        here = "parameterGroups.%s" % group_name
        if not group_name or len(group_name) > 256:
            raise invalid("[VALIDATION_ERROR]: parameter group names must be 1-256 characters: %r" % group_name)
        if not isinstance(group, dict):
            raise invalid("[VALIDATION_ERROR]: %s must be an object" % here)
        for name in group:
            if name not in ("description", "parameters"):
                raise unknown_field(name, here)
        if "description" in group and not isinstance(group["description"], str):
            raise invalid("[VALIDATION_ERROR]: %s.description must be a string" % here)
        size += check_parameters(group.get("parameters", {}), here + ".parameters", names, seen)
    if len(seen) > 3000:
        raise invalid("[VALIDATION_ERROR]: %d parameters, at most 3000 allowed" % len(seen))
    if size > 1000000:
        raise invalid("[VALIDATION_ERROR]: the values hold %d characters, at most 1000000 allowed" % size)
    description = None
    if "version" in template:
        version = template["version"]
        if not isinstance(version, dict):
            raise invalid("[VALIDATION_ERROR]: version must be an object")
        for name in version:
            if name != "description":
                raise invalid("[VALIDATION_ERROR]: version.%s is output only: a published template's version "
                              "may only carry a description" % name)
        description = version.get("description")
        if description is not None and (not isinstance(description, str) or len(description) > 1024):
            raise invalid("[VALIDATION_ERROR]: version.description must be a string of at most 1024 characters")
    stored = {}
    for name in ("conditions", "parameters", "parameterGroups"):
        if template.get(name):
            stored[name] = template[name]
    return stored, description


def client_entries(template):
    """What a device's fetch gets from a client template: every parameter (top level and groups)
    with a static default value. Conditional values are not evaluated (the fake has no context
    to evaluate them in); useInAppDefault and managed values are left out."""
    entries = {}
    parameters = dict(template.get("parameters", {}))
    for group in template.get("parameterGroups", {}).values():
        parameters.update(group.get("parameters", {}))
    for key, parameter in parameters.items():
        default = parameter.get("defaultValue", {})
        if isinstance(default.get("value"), str):
            entries[key] = default["value"]
    return entries


# --- the service ----------------------------------------------------------------------------------

class Admin:
    """The admin APIs' state (tokens in memory, templates in DIR/admin-state.json) and handlers."""

    def __init__(self, directory, append_line):
        self.directory = directory
        self.append_line = append_line
        self.lock = threading.RLock()
        self.tokens = {}  # access token -> {"expires": unix time, "scopes": [...]}
        self.failures_list = None  # the adminFailures list (as JSON text) the counters belong to
        self.failures_used = []
        self.expired_marker = None  # the last expireAccessTokens value acted on
        self.applied_publish = None  # the last publishBeforeNextPut value applied (as JSON text)

    def path(self, name):
        return os.path.join(self.directory, name)

    @staticmethod
    def route(method, path):
        """(api, match) for an admin API path, or None. A known path with another method is None."""
        for api, api_method, pattern in ROUTES:
            match = pattern.match(path)
            if match and method == api_method:
                return api, match
        return None

    # --- state ----------------------------------------------------------------------------------

    def load_state(self, m, persist_seed=True):
        """The templates: DIR/admin-state.json, or when it is missing the mode's seeds (written to
        the file when there is one, so later mode changes do not alter history)."""
        try:
            with open(self.path("admin-state.json")) as f:
                return json.load(f)
        except FileNotFoundError:
            pass
        state, seeded = {}, False
        for namespace, key in (("firebase", "adminTemplate"), ("firebase-server", "adminServerTemplate")):
            seed = m.get(key)
            if seed is None:
                continue
            if not isinstance(seed, dict):
                raise AdminError(500, "mode.json %s must be a template object" % key)
            seed = dict(seed)
            version = seed.pop("version", None)  # a seed may say which version number it has
            number = int(version.get("versionNumber", 1)) if isinstance(version, dict) else 1
            try:
                stored, _ = check_template(seed, "mode.json " + key)
            except AdminError as error:
                raise AdminError(500, "mode.json %s: %s" % (key, error.message))
            version = {"versionNumber": str(number), "updateTime": now_rfc3339(),
                       "updateUser": {"email": "console-user@rcagent.invalid"}, "updateOrigin": "CONSOLE",
                       "updateType": "INCREMENTAL_UPDATE"}
            state[namespace] = {"current": number, "versions": [{"template": stored, "version": version}]}
            seeded = True
        if seeded and persist_seed:
            self.save_state(state)
        return state

    def save_state(self, state):
        # Temp + rename: a test reading the file never sees half of it.
        temporary = self.path("admin-state.tmp")
        with open(temporary, "w") as f:
            json.dump(state, f, indent=1)
        os.rename(temporary, self.path("admin-state.json"))

    @staticmethod
    def current(state, namespace):
        """(number, template, version) of the namespace's current template; (0, {}, None) before any."""
        space = state.get(namespace)
        if not space or not space.get("versions"):
            return 0, {}, None
        number = space["current"]
        for entry in space["versions"]:
            if int(entry["version"]["versionNumber"]) == number:
                return number, entry["template"], entry["version"]
        return 0, {}, None

    def publish(self, state, namespace, template, version_fields):
        """Stores `template` as the namespace's next version and tells the device side."""
        space = state.setdefault(namespace, {"current": 0, "versions": []})
        number = max([space["current"]] + [int(e["version"]["versionNumber"]) for e in space["versions"]]) + 1
        version = {"versionNumber": str(number), "updateTime": now_rfc3339()}
        version.update(version_fields)
        space["versions"].append({"template": template, "version": version})
        space["versions"] = space["versions"][-KEPT_VERSIONS:]
        space["current"] = number
        self.save_state(state)
        if namespace == "firebase":
            # Every open realtime stream announces the new version, as Google's does.
            self.append_line("realtime.jsonl", {"latestTemplateVersionNumber": str(number)})
        return number, version

    def client_template(self, m):
        """The published client template as the fetch handler serves it ({"version", "entries"}),
        or None when nothing was seeded or published through the admin API."""
        with self.lock:
            state = self.load_state(m)
            number, template, _ = self.current(state, "firebase")
        if number == 0:
            return None
        return {"version": number, "entries": client_entries(template)}

    # --- shared checks --------------------------------------------------------------------------

    def service_account(self):
        try:
            with open(self.path("service-account.json")) as f:
                account = json.load(f)
            with open(self.path("service-account-public.pem")) as f:
                public = rsa_public_key(f.read())
        except (OSError, ValueError, IndexError) as error:
            raise AdminError(500, "the test's service account files in the server directory are unusable: %s"
                             % error)
        return account, public

    def injected_failure(self, m, api):
        """The next "adminFailures" entry for `api` that still has times left, consumed."""
        failures = m.get("adminFailures") or []
        known = set().union(*FAILURE_NAMES.values())
        for index, failure in enumerate(failures):
            # A misspelt entry would never fire, and a test relying on it would pass for nothing.
            if not isinstance(failure, dict) or failure.get("api") not in known or "status" not in failure:
                raise AdminError(500, "mode.json adminFailures[%d] must be {\"api\": one of %s, \"status\": N, ...}, "
                                 "got %s" % (index, ", ".join(sorted(known)), json.dumps(failure)))
        text = json.dumps(failures, sort_keys=True)
        with self.lock:
            if text != self.failures_list:  # a new list starts afresh
                self.failures_list, self.failures_used = text, [0] * len(failures)
            for index, failure in enumerate(failures):
                if failure.get("api") not in FAILURE_NAMES[api]:
                    continue
                if self.failures_used[index] >= int(failure.get("times", 1)):
                    continue
                self.failures_used[index] += 1
                break
            else:
                return None
        status = int(failure["status"])
        headers = {"Retry-After": str(failure["retryAfter"])} if failure.get("retryAfter") is not None else {}
        message = failure.get("message") or "%s answers %d (injected by the test's mode.json)" % (api, status)
        if api == "oauth-token":
            return AdminError(status, message, oauth=OAUTH_FORCED_ERRORS.get(status, "internal_failure"),
                              headers=headers, forced=True)
        details = None
        if api == "fcm-send" and status != 401:
            code = failure.get("errorCode") or FCM_ERROR_CODES.get(status, "UNSPECIFIED_ERROR")
            details = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": code}]
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="https://accounts.google.com/", error="invalid_token"'
        return AdminError(status, message, details=details, headers=headers, forced=True)

    def expire_tokens_when_asked(self, m):
        """Acts on a new "expireAccessTokens" value: every token issued so far is past its expiry.
        Run first on every admin request (the token endpoint's too), so a token issued after the
        test asked stays valid."""
        with self.lock:
            marker = m.get("expireAccessTokens")
            if marker not in (None, False) and marker != self.expired_marker:
                self.expired_marker = marker
                for info in self.tokens.values():
                    info["expires"] = min(info["expires"], time.time() - 1)

    def bearer(self, m, headers, scopes):
        """The request's access token: 401 when missing, unknown or expired, 403 without one of `scopes`."""
        challenge = {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'}
        values = headers.get_all("Authorization") or []
        if not values:
            raise AdminError(401, "Request is missing required authentication credential. Expected OAuth 2 access "
                             "token, login cookie or other valid authentication credential.", headers=challenge)
        if len(values) > 1 or not values[0].startswith("Bearer ") or not values[0][7:].strip():
            raise AdminError(401, "Request had invalid authentication credentials: header Authorization must be "
                             "one 'Bearer <access token>'", headers=challenge)
        with self.lock:
            info = self.tokens.get(values[0][7:].strip())
        if info is None:
            raise AdminError(401, "Request had invalid authentication credentials. Expected OAuth 2 access token "
                             "(this one was never issued).", headers=challenge)
        if time.time() >= info["expires"]:
            raise AdminError(401, "Request had invalid authentication credentials: the access token expired.",
                             headers=challenge)
        if not set(scopes) & set(info["scopes"]):
            raise AdminError(403, "Request had insufficient authentication scopes (needs one of %s)."
                             % " ".join(scopes), details=[{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                                          "reason": "ACCESS_TOKEN_SCOPE_INSUFFICIENT"}])

    def check_project(self, m, project):
        account, _ = self.service_account()
        allowed = {account.get("project_id"), m.get("project"), m.get("projectNumber")} - {None}
        if project not in allowed:
            raise AdminError(403, "The caller does not have permission (project %r, expected %s)."
                             % (project, " or ".join(repr(p) for p in sorted(allowed))))

    @staticmethod
    def json_body(headers, body):
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise invalid("header Content-Type must be application/json, got %r" % headers.get("Content-Type"))
        if body is None:
            raise invalid("missing body (a JSON object)")
        if not isinstance(body, dict):
            raise invalid("Invalid JSON payload received: the body must be a JSON object")
        return body

    @staticmethod
    def namespace(match):
        namespace = match.group(2) or "firebase"
        if namespace not in ("firebase", "firebase-server"):
            raise invalid("namespace %r in the path: must be firebase or firebase-server" % namespace)
        return namespace

    @staticmethod
    def etag(project, number):
        return "etag-%s-%d" % (project, number)

    # --- dispatch -------------------------------------------------------------------------------

    def handle(self, api, match, m, query, headers, body):
        """Answers one request: (status, JSON answer, extra headers, whether the answer carries the
        template's ETag). Raises AdminError for error answers."""
        self.expire_tokens_when_asked(m)
        failure = self.injected_failure(m, api)
        if failure:
            raise failure
        return getattr(self, "api_" + api.replace("-", "_"))(match, m, query, headers, body)

    def api_oauth_token(self, match, m, query, headers, body):
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if content_type != "application/x-www-form-urlencoded":
            raise AdminError(400, "the token request must be application/x-www-form-urlencoded, got Content-Type "
                             "%r" % headers.get("Content-Type"), oauth="invalid_request")
        form = body if isinstance(body, dict) else {}
        if "grant_type" not in form:
            raise AdminError(400, "Missing required parameter: grant_type", oauth="invalid_request")
        if form["grant_type"] != JWT_BEARER:
            raise AdminError(400, "Invalid grant_type: %s" % form["grant_type"], oauth="unsupported_grant_type")
        if not form.get("assertion"):
            raise AdminError(400, "Missing required parameter: assertion", oauth="invalid_request")
        account, public = self.service_account()
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
        now = time.time()
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
        expires_in = int(m.get("accessTokenExpiresIn", 3600))
        token = "ya29." + secrets.token_urlsafe(48)
        with self.lock:
            self.tokens[token] = {"expires": now + expires_in, "scopes": scopes}
        return 200, {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}, \
            {"Cache-Control": "no-cache, no-store, max-age=0, must-revalidate"}, False

    def rc_common(self, match, m, query, headers, allowed_query):
        self.bearer(m, headers, [RC_SCOPE, CLOUD_SCOPE])
        project = match.group(1)
        self.check_project(m, project)
        namespace = self.namespace(match)
        for name in query:
            if name not in allowed_query + ["prettyPrint", "alt"]:
                raise unknown_query(name)
        return project, namespace

    def api_rc_get(self, match, m, query, headers, body):
        project, namespace = self.rc_common(match, m, query, headers, ["versionNumber", "version_number"])
        with self.lock:
            state = self.load_state(m)
            number, template, version = self.current(state, namespace)
            wanted = query.get("versionNumber", query.get("version_number"))
            if wanted is not None:
                if not re.match(r"^[1-9][0-9]*$", wanted):
                    raise invalid("query parameter versionNumber must be a positive integer, got %r" % wanted)
                for entry in state.get(namespace, {}).get("versions", []):
                    if entry["version"]["versionNumber"] == wanted:
                        template, version = entry["template"], entry["version"]
                        break
                else:
                    raise AdminError(404, "[VERSION_NOT_FOUND]: version %s of the %s template not found"
                                     % (wanted, namespace))
        answer = dict(template)
        if version:
            answer["version"] = version
        return 200, answer, {"ETag": self.etag(project, number)}, True

    def api_rc_put(self, match, m, query, headers, body):
        project, namespace = self.rc_common(match, m, query, headers, ["validateOnly", "validate_only"])
        validate_only = bool_query(query, ["validateOnly", "validate_only"])
        if_match = headers.get_all("If-Match") or []
        if len(if_match) != 1 or not if_match[0].strip():
            raise AdminError(400, "[VALIDATION_ERROR]: header If-Match is required (the ETag of the template "
                             "read, or * to force)", google_status="FAILED_PRECONDITION")
        if_match = if_match[0].strip()
        if if_match.startswith('"') and if_match.endswith('"') and len(if_match) > 1:
            if_match = if_match[1:-1]
        with self.lock:
            state = self.load_state(m)
            other = m.get("publishBeforeNextPut")
            other_text = json.dumps(other, sort_keys=True)
            if other is not None and other_text != self.applied_publish:
                # Someone else publishes between the client's read and this write.
                self.applied_publish = other_text
                try:
                    stored, description = check_template(other, "mode.json publishBeforeNextPut")
                except AdminError as error:
                    raise AdminError(500, "mode.json publishBeforeNextPut: %s" % error.message)
                fields = {"updateUser": {"email": "someone-else@rcagent.invalid"}, "updateOrigin": "CONSOLE",
                          "updateType": "INCREMENTAL_UPDATE"}
                if description:
                    fields["description"] = description
                self.publish(state, namespace, stored, fields)
            template, description = check_template(self.json_body(headers, body))
            number, _, _ = self.current(state, namespace)
            current_etag = self.etag(project, number)
            if if_match != "*" and if_match != current_etag:
                status = int(m.get("staleEtagStatus", 409))
                raise AdminError(status, "[VERSION_MISMATCH]: If-Match %r is not the current ETag %r: the template "
                                 "was published since it was read" % (if_match, current_etag),
                                 google_status="FAILED_PRECONDITION" if status == 412 else "ABORTED")
            if validate_only:
                answer = dict(template)
                if description:
                    answer["version"] = {"description": description}
                return 200, answer, {"ETag": current_etag + "-0"}, True
            account, _ = self.service_account()
            fields = {"updateUser": {"email": account.get("client_email")}, "updateOrigin": "REST_API",
                      "updateType": "FORCED_UPDATE" if if_match == "*" else "INCREMENTAL_UPDATE"}
            if description:
                fields["description"] = description
            number, version = self.publish(state, namespace, template, fields)
        answer = dict(template)
        answer["version"] = version
        return 200, answer, {"ETag": self.etag(project, number)}, True

    def api_rc_versions(self, match, m, query, headers, body):
        names = ["pageSize", "page_size", "pageToken", "page_token", "endVersionNumber", "end_version_number",
                 "startTime", "start_time", "endTime", "end_time"]
        project, namespace = self.rc_common(match, m, query, headers, names)
        q = {name: query.get(name, query.get(re.sub(r"([A-Z])", lambda c: "_" + c.group(1).lower(), name)))
             for name in ("pageSize", "pageToken", "endVersionNumber", "startTime", "endTime")}
        size = 300
        if q["pageSize"] is not None:
            if not re.match(r"^[0-9]+$", q["pageSize"]) or not 1 <= int(q["pageSize"]) <= 300:
                raise invalid("query parameter pageSize must be 1-300, got %r" % q["pageSize"])
            size = int(q["pageSize"])
        with self.lock:
            versions = [e["version"] for e in self.load_state(m).get(namespace, {}).get("versions", [])]
        versions.sort(key=lambda v: -int(v["versionNumber"]))
        if q["endVersionNumber"] is not None:
            if not re.match(r"^[1-9][0-9]*$", q["endVersionNumber"]):
                raise invalid("query parameter endVersionNumber must be a positive integer, got %r"
                              % q["endVersionNumber"])
            versions = [v for v in versions if int(v["versionNumber"]) <= int(q["endVersionNumber"])]
        if q["startTime"] is not None:
            start = parse_rfc3339(q["startTime"], "startTime")
            versions = [v for v in versions if parse_rfc3339(v["updateTime"], "updateTime") >= start]
        if q["endTime"] is not None:
            end = parse_rfc3339(q["endTime"], "endTime")
            versions = [v for v in versions if parse_rfc3339(v["updateTime"], "updateTime") < end]
        if q["pageToken"]:
            try:
                below = int(base64.urlsafe_b64decode(q["pageToken"].encode()).decode().removeprefix("below:"))
            except ValueError:
                raise invalid("query parameter pageToken %r is not a token this API issued" % q["pageToken"])
            versions = [v for v in versions if int(v["versionNumber"]) < below]
        answer = {}
        if versions[:size]:
            answer["versions"] = versions[:size]
        if len(versions) > size:
            last = versions[size - 1]["versionNumber"]
            answer["nextPageToken"] = base64.urlsafe_b64encode(("below:" + last).encode()).decode()
        return 200, answer, {}, False

    def api_rc_rollback(self, match, m, query, headers, body):
        project, namespace = self.rc_common(match, m, query, headers, [])
        body = self.json_body(headers, body)
        for name in body:
            if name not in ("versionNumber", "version_number"):
                raise unknown_field(name, "body")
        wanted = body.get("versionNumber", body.get("version_number"))
        if isinstance(wanted, bool) or not isinstance(wanted, (str, int)) or not re.match(r"^[0-9]+$", str(wanted)):
            raise invalid("field versionNumber must be an int64 (a string of digits), got %s" % json.dumps(wanted))
        wanted = int(wanted)
        with self.lock:
            state = self.load_state(m)
            number, _, _ = self.current(state, namespace)
            source = None
            for entry in state.get(namespace, {}).get("versions", []):
                if int(entry["version"]["versionNumber"]) == wanted:
                    source = entry
            if source is None or wanted >= number:
                raise AdminError(404, "[VERSION_NOT_FOUND]: version %d of the %s template cannot be rolled back "
                                 "to (the current version is %d; it must be an older one still kept)"
                                 % (wanted, namespace, number))
            account, _ = self.service_account()
            fields = {"updateUser": {"email": account.get("client_email")}, "updateOrigin": "REST_API",
                      "updateType": "ROLLBACK", "rollbackSource": str(wanted)}
            number, version = self.publish(state, namespace, source["template"], fields)
        answer = dict(source["template"])
        answer["version"] = version
        return 200, answer, {"ETag": self.etag(project, number)}, True

    def api_fcm_send(self, match, m, query, headers, body):
        self.bearer(m, headers, [FCM_SCOPE, CLOUD_SCOPE])
        project = match.group(1)
        self.check_project(m, project)
        for name in query:
            if name not in ("prettyPrint", "alt"):
                raise unknown_query(name)
        body = self.json_body(headers, body)
        for name in body:
            if name not in ("validate_only", "validateOnly", "message"):
                raise unknown_field(name, "body")
        validate_only = body.get("validate_only", body.get("validateOnly", False))
        if not isinstance(validate_only, bool):
            raise fcm_invalid("validate_only must be a boolean, got %s" % kind(validate_only), "validate_only")
        message = body.get("message")
        if not isinstance(message, dict):
            raise fcm_invalid("message must be an object, got %s" % kind(message), "message")
        notes = check_message(message)
        target = message.get("token")
        if target is not None and target in (m.get("fcmUnregisteredTokens") or []):
            raise AdminError(404, "Requested entity was not found.", details=[
                {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "UNREGISTERED"}])
        if validate_only:
            return 200, {"name": "projects/%s/messages/fake_message_id" % project}, {}, False
        name = "projects/%s/messages/%d" % (project, secrets.randbelow(10 ** 18))
        self.append_line("fcm.log", {"name": name, "project": project, "message": message, "notes": notes,
                                     "time": time.time()})
        return 200, {"name": name}, {}, False


# --- FCM messages -------------------------------------------------------------------------------

def fcm_invalid(message, field):
    return AdminError(400, message, details=[
        {"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": "INVALID_ARGUMENT"},
        {"@type": "type.googleapis.com/google.rpc.BadRequest",
         "fieldViolations": [{"field": field, "description": message}]}])


def string_map(value, where):
    if not isinstance(value, dict):
        raise fcm_invalid("%s must be an object of strings, got %s" % (where, kind(value)), where)
    for key, item in value.items():
        if not isinstance(item, str):
            raise fcm_invalid("Invalid value at '%s[%s]' (TYPE_STRING): values must be strings, got %s %s"
                              % (where, key, kind(item), json.dumps(item)), "%s[%s]" % (where, key))
    return value


def check_data_keys(data, where):
    for key in data:
        lowered = key.lower()
        if key in ("from", "message_type") or lowered.startswith("google") or lowered.startswith("gcm"):
            raise fcm_invalid("Invalid data payload key %r in %s: from, message_type and keys starting with google "
                              "or gcm are reserved" % (key, where), where)


def check_message(message):
    """Validates a Message as the FCM v1 reference describes it; returns notes about things FCM
    accepts but a device platform may not deliver as hoped."""
    allowed = {"name", "data", "notification", "android", "webpush", "apns", "fcm_options", "fcmOptions", "token",
               "topic", "condition"}
    for name in message:
        if name not in allowed:
            raise unknown_field(name, "message")
    targets = [name for name in ("token", "topic", "condition") if name in message]
    if not targets:
        raise fcm_invalid("Recipient of the message is not set (exactly one of token, topic, condition)", "message")
    if len(targets) > 1:
        raise fcm_invalid("Invalid value at 'message' (oneof), oneof field 'target' is already set. Cannot set "
                          "'%s' (exactly one of token, topic, condition)" % targets[1], "message." + targets[1])
    target = targets[0]
    value = message[target]
    if not isinstance(value, str) or not value:
        raise fcm_invalid("message.%s must be a non-empty string" % target, "message." + target)
    if target == "topic":
        if value.startswith("/topics/"):
            raise fcm_invalid("Invalid topic name %r: give the bare name, without the /topics/ prefix" % value,
                              "message.topic")
        if not TOPIC.match(value):
            raise fcm_invalid("Invalid topic name %r: must match [a-zA-Z0-9-_.~%%]+" % value, "message.topic")
    if target == "condition":
        topics = re.findall(r"'([^']*)'\s+in\s+topics", value)
        if not topics or len(topics) > 5:
            raise fcm_invalid("Invalid condition %r: it must name 1-5 topics as 'name' in topics" % value,
                              "message.condition")
    size = 0
    data = string_map(message.get("data", {}), "message.data")
    check_data_keys(data, "message.data")
    size += sum(len(k.encode()) + len(v.encode()) for k, v in data.items())
    notification = message.get("notification")
    if notification is not None:
        if not isinstance(notification, dict):
            raise fcm_invalid("message.notification must be an object", "message.notification")
        for name in notification:
            if name not in ("title", "body", "image"):
                raise unknown_field(name, "message.notification")
        string_map(notification, "message.notification")
        size += sum(len(v.encode()) for v in notification.values())
    limit = 4096 if target == "token" else 2048
    if size > limit:
        raise fcm_invalid("Message is too big: the data (keys and values) and notification hold %d bytes, at most "
                          "%d allowed for %s messages" % (size, limit, "token" if limit == 4096 else "topic"),
                          "message")
    options = message.get("fcm_options", message.get("fcmOptions"))
    if options is not None:
        if not isinstance(options, dict):
            raise fcm_invalid("message.fcm_options must be an object", "message.fcm_options")
        label = options.get("analytics_label", options.get("analyticsLabel"))
        if label is not None and (not isinstance(label, str) or not ANALYTICS_LABEL.match(label)):
            raise fcm_invalid("analytics_label %r must match [a-zA-Z0-9-_.~%%]{1,50}" % label, "message.fcm_options")
    android = message.get("android")
    if android is not None:
        if not isinstance(android, dict):
            raise fcm_invalid("message.android must be an object", "message.android")
        if "priority" in android and android["priority"] not in ("NORMAL", "HIGH"):
            raise fcm_invalid("message.android.priority must be NORMAL or HIGH", "message.android.priority")
        if "ttl" in android and (not isinstance(android["ttl"], str) or not DURATION.match(android["ttl"])):
            raise fcm_invalid("message.android.ttl %r is not a duration like \"3.5s\"" % android["ttl"],
                              "message.android.ttl")
        if "data" in android:
            check_data_keys(string_map(android["data"], "message.android.data"), "message.android.data")
    if message.get("webpush") is not None and not isinstance(message["webpush"], dict):
        raise fcm_invalid("message.webpush must be an object", "message.webpush")
    notes = []
    apns = message.get("apns")
    aps = {}
    if apns is not None:
        if not isinstance(apns, dict):
            raise fcm_invalid("message.apns must be an object", "message.apns")
        for name in apns:
            if name not in ("headers", "payload", "fcm_options", "fcmOptions", "live_activity_token",
                            "liveActivityToken"):
                raise unknown_field(name, "message.apns")
        apns_headers = string_map(apns.get("headers", {}), "message.apns.headers")
        priority = apns_headers.get("apns-priority")
        if priority is not None and priority not in ("5", "10"):
            raise fcm_invalid("apns-priority %r must be \"5\" or \"10\"" % priority, "message.apns.headers")
        payload = apns.get("payload", {})
        if not isinstance(payload, dict):
            raise fcm_invalid("message.apns.payload must be an object", "message.apns.payload")
        aps = payload.get("aps", {})
        if not isinstance(aps, dict):
            raise fcm_invalid("message.apns.payload.aps must be an object", "message.apns.payload.aps")
        if len(json.dumps(payload).encode()) > 4096:
            raise fcm_invalid("Message is too big: apns.payload is over 4096 bytes", "message.apns.payload")
    if notification is None and "alert" not in aps:
        priority = ((apns or {}).get("headers") or {}).get("apns-priority")
        if priority != "5":
            notes.append("data-only message without apns-priority 5: iOS only accepts normal priority for it "
                         "(apns-priority %s)" % (priority or "unset, FCM's default 10"))
    return notes
