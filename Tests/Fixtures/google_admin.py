"""Google's admin APIs for the fake Firebase backend (firebase_server.py): the OAuth 2.0 token
endpoint of a service account, Remote Config REST v1 and FCM HTTP v1 send, written from Google's
public documentation. firebase_server.py routes requests here, logs them and writes the answers;
its docstring lists every mode key and file this module reads or writes. The token endpoint's
checks live in google_oauth.py, template validation in rc_template.py, FCM message validation in
fcm_message.py, the error answers in google_errors.py.

Everything is checked the way the documentation describes it, so a client that passes here speaks
the protocol Google documents: RS256 JWTs in base64url without padding, form-encoded token
requests, bearer tokens with the right scope, ETags only for clients that accept gzip, If-Match on
every publish, and FCM messages within the documented target, key and size rules.
"""
import base64, datetime, json, os, re, secrets, threading, time

from fcm_message import check_message
from google_errors import AdminError, fcm_invalid, invalid, kind, unknown_field, unknown_query
from google_oauth import CLOUD_SCOPE, FCM_SCOPE, RC_SCOPE, rsa_public_key, verify_token_request
from rc_template import check_template, client_entries


# The FcmError errorCode FCM's error-code page pairs with each HTTP status an injected failure uses.
FCM_ERROR_CODES = {400: "INVALID_ARGUMENT", 403: "SENDER_ID_MISMATCH", 404: "UNREGISTERED", 429: "QUOTA_EXCEEDED",
                   500: "INTERNAL", 503: "UNAVAILABLE"}
# The token endpoint's error codes for injected statuses; 5xx is "internal_failure", the one
# google-auth retries once.
OAUTH_FORCED_ERRORS = {401: "invalid_client", 429: "rate_limit_exceeded"}

# The un-namespaced Remote Config paths are the client template's ("firebase"); the namespaced
# ones also reach the server template ("firebase-server").
NAMESPACE = r"(?:/namespaces/([^/:]+))?"
ROUTES = [
    ("oauth-token", "POST", re.compile(r"^/token$")),
    ("rc-get", "GET", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig$")),
    ("rc-put", "PUT", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig$")),
    ("rc-versions", "GET", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig:listVersions$")),
    ("rc-rollback", "POST", re.compile(r"^/v1/projects/([^/:]+)" + NAMESPACE + r"/remoteConfig:rollback$")),
    ("fcm-send", "POST", re.compile(r"^/v1/projects/([^/:]+)/messages:send$")),
]
# The names a test may use in "adminFailures" for each API: short ones, and the log's names.
FAILURE_NAMES = {"oauth-token": {"token", "oauth-token"}, "rc-get": {"rc-get"}, "rc-put": {"rc-put"},
                 "rc-versions": {"versions", "rc-versions"}, "rc-rollback": {"rollback", "rc-rollback"},
                 "fcm-send": {"fcm", "fcm-send"}}

KEPT_VERSIONS = 300  # Remote Config keeps the newest 300 versions of each template


def now_rfc3339():
    """Now as Version.updateTime writes it: RFC 3339, UTC, "Z"."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text, name):
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise invalid("query parameter %s=%r is not an RFC 3339 time" % (name, text))


def bool_query(query, names):
    """A boolean query parameter under any of `names` (Google binds camelCase and snake_case alike)."""
    value = None
    for name in names:
        if name in query:
            if query[name] not in ("true", "false"):
                raise invalid("query parameter %s must be true or false, got %r" % (name, query[name]))
            value = query[name] == "true"
    return bool(value)


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

    def load_state(self, m):
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
        if seeded:
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
        """The key file's fields and the public key, read on every call: a test may rotate the key."""
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
                raise AdminError(500, "mode.json adminFailures[%d] must be {\"api\": one of %s, \"status\": N, "
                                 "...}, got %s" % (index, ", ".join(sorted(known)), json.dumps(failure)))
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
        # The answer looks like the real one for that status: the token endpoint's own error form,
        # FCM's FcmError detail, a Bearer challenge with a 401.
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
        # Messages as Google's front end words them, with a detail saying which case this is.
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
        """The path's project must be the account's (by ID, or the mode's project number): Google
        answers another project's resources with 403, whether or not they exist."""
        account, _ = self.service_account()
        allowed = {account.get("project_id"), m.get("project"), m.get("projectNumber")} - {None}
        if project not in allowed:
            raise AdminError(403, "The caller does not have permission (project %r, expected %s)."
                             % (project, " or ".join(repr(p) for p in sorted(allowed))))

    @staticmethod
    def json_body(headers, body):
        """The request's JSON object body, sent as application/json."""
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
        """The ETag of a template version, shaped like Google's ("etag-<project number>-<version>")."""
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
        """A verified JWT bearer grant gets a fresh opaque token (shaped like Google's "ya29." ones)."""
        account, public = self.service_account()
        now = time.time()
        scopes = verify_token_request(headers, body, account, public, now)
        expires_in = int(m.get("accessTokenExpiresIn", 3600))
        token = "ya29." + secrets.token_urlsafe(48)
        with self.lock:
            self.tokens[token] = {"expires": now + expires_in, "scopes": scopes}
        return 200, {"access_token": token, "expires_in": expires_in, "token_type": "Bearer"}, \
            {"Cache-Control": "no-cache, no-store, max-age=0, must-revalidate"}, False

    def rc_common(self, match, m, query, headers, allowed_query):
        """What every Remote Config call checks first: token and scope, project, namespace, query."""
        self.bearer(m, headers, [RC_SCOPE, CLOUD_SCOPE])
        project = match.group(1)
        self.check_project(m, project)
        namespace = self.namespace(match)
        for name in query:
            if name not in allowed_query + ["prettyPrint", "alt"]:
                raise unknown_query(name)
        return project, namespace

    def api_rc_get(self, match, m, query, headers, body):
        """projects.getRemoteConfig: the current template, or the one of versionNumber (what the Admin
        SDK's getTemplateAtVersion asks for); its ETag leaves only when gzip is accepted."""
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
                        # An old version's ETag is its own, so publishing over it is a stale write.
                        number, template, version = int(wanted), entry["template"], entry["version"]
                        break
                else:
                    raise AdminError(404, "[VERSION_NOT_FOUND]: version %s of the %s template not found"
                                     % (wanted, namespace))
        answer = dict(template)
        if version:
            answer["version"] = version
        return 200, answer, {"ETag": self.etag(project, number)}, True

    def api_rc_put(self, match, m, query, headers, body):
        """projects.updateRemoteConfig: If-Match guards against lost updates (the ETag read, or "*"
        to force); validateOnly checks everything and writes nothing."""
        project, namespace = self.rc_common(match, m, query, headers, ["validateOnly", "validate_only"])
        validate_only = bool_query(query, ["validateOnly", "validate_only"])
        if_match = headers.get_all("If-Match") or []
        if len(if_match) != 1 or not if_match[0].strip():
            raise AdminError(400, "[VALIDATION_ERROR]: header If-Match is required (the ETag of the template "
                             "read, or * to force)", google_status="FAILED_PRECONDITION")
        if_match = if_match[0].strip()
        # Google's ETags travel unquoted; a client that quotes one (as RFC 9110 writes them) still matches.
        if if_match.startswith('"') and if_match.endswith('"') and len(if_match) > 1:
            if_match = if_match[1:-1]
        with self.lock:
            state = self.load_state(m)
            other = m.get("publishBeforeNextPut")
            other_text = json.dumps(other, sort_keys=True)
            if other is not None and other_text != self.applied_publish:
                # Someone else publishes between the client's read and this write. The value is a
                # template, or {"template", "namespace"?, "id"?} (an id lets a test repeat a template).
                self.applied_publish = other_text
                wrapped = isinstance(other, dict) and "template" in other
                other_namespace = other.get("namespace", namespace) if wrapped else namespace
                try:
                    if other_namespace not in ("firebase", "firebase-server"):
                        raise invalid("namespace %r is not firebase or firebase-server" % other_namespace)
                    stored, description = check_template(other["template"] if wrapped else other,
                                                         "mode.json publishBeforeNextPut")
                except AdminError as error:
                    raise AdminError(500, "mode.json publishBeforeNextPut: %s" % error.message)
                fields = {"updateUser": {"email": "someone-else@rcagent.invalid"}, "updateOrigin": "CONSOLE",
                          "updateType": "INCREMENTAL_UPDATE"}
                if description:
                    fields["description"] = description
                self.publish(state, other_namespace, stored, fields)
            # Validation comes before the ETag comparison: a bad template is 400 whatever its ETag.
            template, description = check_template(self.json_body(headers, body))
            number, _, _ = self.current(state, namespace)
            current_etag = self.etag(project, number)
            if if_match != "*" and if_match != current_etag:
                status = int(m.get("staleEtagStatus", 409))
                raise AdminError(status, "[VERSION_MISMATCH]: If-Match %r is not the current ETag %r: the template "
                                 "was published since it was read" % (if_match, current_etag),
                                 google_status="FAILED_PRECONDITION" if status == 412 else "ABORTED")
            if validate_only:
                # The Admin SDK documents this "-0" ETag, and keeps the one it read for the real publish.
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
        """remoteConfig:listVersions: newest first, filtered by endVersionNumber and update times,
        paged by an opaque token (here: the version number to continue below)."""
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
        """remoteConfig:rollback: "equivalent to getting a previously published template and
        re-publishing it using a force update", as a new version that names its source."""
        project, namespace = self.rc_common(match, m, query, headers, [])
        body = self.json_body(headers, body)
        for name in body:
            if name not in ("versionNumber", "version_number"):
                raise unknown_field(name, "body")
        # An int64 in proto3 JSON is a string of digits, or a plain number.
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
        """projects.messages.send: a valid message is recorded in DIR/fcm.log (not with validate_only,
        which "tests the request without actually delivering")."""
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
            # FCM names no real message for a dry run.
            return 200, {"name": "projects/%s/messages/fake_message_id" % project}, {}, False
        name = "projects/%s/messages/%d" % (project, secrets.randbelow(10 ** 18))
        self.append_line("fcm.log", {"name": name, "project": project, "message": message, "notes": notes,
                                     "time": time.time()})
        return 200, {"name": name}, {}, False
