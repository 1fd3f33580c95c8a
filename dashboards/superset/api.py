"""A small client of Superset's REST API: log in, import and export assets, read chart data.

Standard library only (urllib), so tapelens needs no HTTP package: a JWT from
/api/v1/security/login authenticates, and the CSRF token with its session cookie covers the
form posts (imports) that Superset's CSRF protection checks.
"""

from __future__ import annotations

import http.cookiejar
import json
import secrets
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from tapelens.dashboards.superset.install import DashboardsError

REQUEST_TIMEOUT_S = 300.0
PAGE_SIZE = 100


class SupersetClient:
    """One logged-in session with a Superset server."""

    def __init__(self, url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        self._token: str | None = None
        self._csrf: str | None = None

    # -- transport -----------------------------------------------------------------------------

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        content_type: str | None = None,
        query: dict[str, str] | None = None,
    ) -> bytes:
        url = f"{self.url}{path}"
        if query:
            url += "?" + urllib.parse.urlencode(query)
        request = urllib.request.Request(url, data=body, method=method)
        request.add_header("Accept", "application/json, application/zip")
        request.add_header("Referer", self.url + "/")
        if content_type:
            request.add_header("Content-Type", content_type)
        if self._token:
            request.add_header("Authorization", f"Bearer {self._token}")
        if self._csrf and method != "GET":
            request.add_header("X-CSRFToken", self._csrf)
        try:
            with self._opener.open(request, timeout=self.timeout_s) as response:
                return bytes(response.read())
        except urllib.error.HTTPError as exc:
            raise DashboardsError(
                f"Superset at {self.url} answered {exc.code} to {method} {path}: "
                f"{_message(exc.read())}"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise DashboardsError(f"cannot reach Superset at {self.url}: {reason}") from None

    def get_json(self, path: str, query: dict[str, str] | None = None) -> Any:
        return json.loads(self._request("GET", path, query=query))

    def send_json(self, method: str, path: str, payload: Any) -> Any:
        body = json.dumps(payload).encode()
        return json.loads(self._request(method, path, body, "application/json"))

    # -- API -----------------------------------------------------------------------------------

    def login(self, username: str, password: str) -> None:
        """Log in with Superset's own user database; the password is sent, never shown."""
        try:
            answer = self.send_json(
                "POST",
                "/api/v1/security/login",
                {"username": username, "password": password, "provider": "db", "refresh": True},
            )
        except DashboardsError as exc:
            if " 401 " in str(exc):
                raise DashboardsError(
                    f"Superset at {self.url} refused the login of {username!r}: wrong password?"
                ) from None
            raise
        self._token = answer["access_token"]
        self._csrf = self.get_json("/api/v1/security/csrf_token/")["result"]

    def import_assets(self, bundle: bytes, passwords: dict[str, str]) -> None:
        """Import a bundle of databases, datasets, charts and dashboards, replacing the ones
        with the same UUIDs (Superset's assets import overwrites everything it names)."""
        body, content_type = _multipart(
            fields={"passwords": json.dumps(passwords), "overwrite": "true"},
            files={"bundle": ("tapelens_dashboards.zip", bundle, "application/zip")},
        )
        self._request("POST", "/api/v1/assets/import/", body, content_type)

    def dashboards(self) -> list[dict[str, Any]]:
        return self._list("/api/v1/dashboard/", ["id", "uuid", "slug", "dashboard_title"])

    def charts(self) -> list[dict[str, Any]]:
        return self._list("/api/v1/chart/", ["id", "uuid", "slice_name", "viz_type"])

    def _list(self, path: str, columns: list[str]) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        page = 0
        while True:
            query = f"(columns:!({','.join(columns)}),page:{page},page_size:{PAGE_SIZE})"
            answer = self.get_json(path, {"q": query})
            found += answer["result"]
            if len(found) >= answer["count"] or not answer["result"]:
                return found
            page += 1

    def export_dashboards(self, ids: list[int]) -> bytes:
        """The export bundle (zip) of these dashboards and everything they use."""
        query = f"!({','.join(str(i) for i in ids)})"
        return self._request("GET", "/api/v1/dashboard/export/", query={"q": query})

    def chart_data(self, chart_id: int) -> dict[str, Any]:
        """The chart's data, computed from the query context saved with it."""
        answer: dict[str, Any] = self.get_json(f"/api/v1/chart/{chart_id}/data/")
        return answer


def _message(raw: bytes) -> str:
    """The useful part of an error answer: Superset's message(s), on one line."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return " ".join(raw.decode(errors="replace").split())[:300] or "no detail"
    if isinstance(doc, dict):
        if "errors" in doc and isinstance(doc["errors"], list):
            parts = [str(e.get("message", e)) for e in doc["errors"] if isinstance(e, dict)]
            extra = [
                json.dumps(e.get("extra"), sort_keys=True)[:300]
                for e in doc["errors"]
                if isinstance(e, dict) and e.get("extra")
            ]
            return "; ".join(parts + extra)[:600]
        if "message" in doc:
            return json.dumps(doc["message"], sort_keys=True)[:600]
    return json.dumps(doc, sort_keys=True)[:600]


def _multipart(
    fields: dict[str, str], files: dict[str, tuple[str, bytes, str]]
) -> tuple[bytes, str]:
    boundary = f"tapelens-{secrets.token_hex(12)}"
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + value.encode()
            + b"\r\n"
        )
    for name, (filename, content, mime) in files.items():
        parts.append(
            (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                f'filename="{filename}"\r\nContent-Type: {mime}\r\n\r\n'
            ).encode()
            + content
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"
