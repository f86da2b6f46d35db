# SPDX-License-Identifier: Apache-2.0
"""A client of corral's session API: standard library only (http.client over AF_UNIX).

    from corral_client import Corral
    c = Corral()                                   # $CORRAL_SOCKET, else the default socket
    s = c.create_session(limits={"pids": 256})
    r = c.run(s["id"], ["sh", "-c", "echo hi"])    # {"exit_code": 0, "stdout": b"hi\\n", ...}
    c.upload(s["id"], "data/in.txt", b"...")       # into /workspace (its directory must exist)
    c.download(s["id"], "data/in.txt")             # b"..."
    c.remove_session(s["id"])
"""
import base64
import http.client
import json
import os
import socket
import urllib.parse


def default_socket():
    """Where `corral daemon` listens by default (the same rules as the corral CLI)."""
    if os.environ.get("CORRAL_SOCKET"):
        return os.environ["CORRAL_SOCKET"]
    if os.geteuid() == 0:
        return "/run/corral/api.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        return runtime + "/corral/api.sock"
    state = os.environ.get("XDG_STATE_HOME", "")
    if not state.startswith("/"):
        state = os.path.expanduser("~/.local/state")
    return state + "/corral/api.sock"


class CorralError(Exception):
    """An API error: the HTTP status, the error code and its message."""

    def __init__(self, status, code, message):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("corral", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


class Corral:
    def __init__(self, socket_path=None, timeout=300):
        self.socket_path = socket_path or default_socket()
        self.timeout = timeout

    def _request(self, method, path, body=None, stream=False):
        conn = _UnixConnection(self.socket_path, None if stream else self.timeout)
        headers = {}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        if resp.status >= 400:
            err = json.loads(resp.read() or b"{}").get("error", {})
            conn.close()
            raise CorralError(resp.status, err.get("code", "unknown"), err.get("message", ""))
        if stream:
            return conn, resp
        out = json.loads(resp.read())
        conn.close()
        return out

    def health(self):
        return self._request("GET", "/v1/health")

    def create_session(self, name=None, limits=None, env=None, ttl=None, workspace=None):
        """ttl: "30m" and the like; workspace: a host directory the daemon copies in once."""
        body = {}
        if name:
            body["name"] = name
        if limits:
            body["limits"] = limits
        if env:
            body["env"] = [f"{k}={v}" for k, v in env.items()]
        if ttl:
            body["ttl"] = ttl
        if workspace:
            body["workspace"] = os.path.realpath(workspace)
        return self._request("POST", "/v1/sessions", body)

    def sessions(self):
        return self._request("GET", "/v1/sessions")["sessions"]

    def session(self, session_id):
        return self._request("GET", f"/v1/sessions/{session_id}")

    def remove_session(self, session_id, keep_workspace=False):
        return self._request("DELETE", f"/v1/sessions/{session_id}", {"keep_workspace": True} if keep_workspace else None)

    def pause(self, session_id):
        return self._request("POST", f"/v1/sessions/{session_id}/pause")

    def resume(self, session_id):
        return self._request("POST", f"/v1/sessions/{session_id}/resume")

    @staticmethod
    def _file_path(session_id, path, kind="files"):
        return f"/v1/sessions/{session_id}/{kind}/" + urllib.parse.quote(path.lstrip("/"), safe="/")

    def upload(self, session_id, path, data):
        """Writes bytes (or a binary file object, streamed) to /workspace/PATH."""
        conn = _UnixConnection(self.socket_path, self.timeout)
        headers = {"Content-Type": "application/octet-stream"}
        if not isinstance(data, (bytes, bytearray)):
            headers["Content-Length"] = str(os.fstat(data.fileno()).st_size)
        conn.request("PUT", self._file_path(session_id, path), body=data, headers=headers)
        resp = conn.getresponse()
        out = json.loads(resp.read() or b"{}")
        conn.close()
        if resp.status >= 400:
            err = out.get("error", {})
            raise CorralError(resp.status, err.get("code", "unknown"), err.get("message", ""))
        return out

    def download(self, session_id, path, into=None):
        """/workspace/PATH's bytes, or, with into (a binary file object), streamed into it."""
        conn, resp = self._request("GET", self._file_path(session_id, path), stream=True)
        try:
            if into is None:
                return resp.read()
            while chunk := resp.read(65536):
                into.write(chunk)
            return None
        finally:
            conn.close()

    def stat(self, session_id, path=""):
        """{"type", "size", "mode"} of /workspace/PATH; a directory's also has "entries"."""
        return self._request("GET", self._file_path(session_id, path, "stat"))

    def remove_file(self, session_id, path):
        return self._request("DELETE", self._file_path(session_id, path))

    def start(self, session_id, argv, env=None, cwd=None, timeout=None):
        """Starts a command; returns its number at once."""
        body = {"argv": list(argv)}
        if env:
            body["env"] = [f"{k}={v}" for k, v in env.items()]
        if cwd:
            body["cwd"] = cwd
        if timeout:
            body["timeout"] = timeout
        return self._request("POST", f"/v1/sessions/{session_id}/commands", body)["id"]

    def output(self, session_id, command):
        """Yields ("stdout"|"stderr", bytes) as the command writes, then ("exit", status dict)."""
        conn, resp = self._request("GET", f"/v1/sessions/{session_id}/commands/{command}/output", stream=True)
        try:
            for line in resp:
                frame = json.loads(line)
                if "stream" in frame:
                    yield frame["stream"], base64.b64decode(frame["data"])
                elif "exit" in frame:
                    yield "exit", frame["exit"]
                    return
                elif frame.get("lost"):
                    raise CorralError(410, "lost", "the session was lost while the command ran")
        finally:
            conn.close()

    def run(self, session_id, argv, **kwargs):
        """Runs a command to its end: {"exit_code", "stdout", "stderr", "report"}."""
        n = self.start(session_id, argv, **kwargs)
        out = {"stdout": b"", "stderr": b""}
        for kind, value in self.output(session_id, n):
            if kind == "exit":
                return {"exit_code": value.get("exit_code", 125), "report": value, **out}
            out[kind] += value
        raise CorralError(502, "no_status", "the output stream ended without a status")
