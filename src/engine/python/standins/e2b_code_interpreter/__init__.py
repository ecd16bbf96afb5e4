"""rwb's local stand-in for `e2b_code_interpreter` (SPEC §18, `[sandbox] e2b = true`):
`AsyncSandbox` and `Sandbox` run each cell in rwb's sandbox (no account, no network),
through the `/execute_batch` route rwb opens for its workers, so that a reward written
for E2B (open-r1's `code_reward`) runs unchanged. Standard library only."""

import asyncio
import http.client
import json
import os
import socket
import uuid

from .models import Execution, Logs, Result  # noqa: F401  (E2B's names)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        http.client.HTTPConnection.__init__(self, "localhost", timeout=timeout)
        self._path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self._path)


def _execute(script, timeout):
    """One cell through rwb's /execute_batch: its answer (a dict)."""
    body = json.dumps({"scripts": [script], "languages": ["python"], "timeout": timeout}).encode()
    path = os.environ.get("RWB_SANDBOX_SOCKET")
    url = os.environ.get("RWB_SANDBOX_URL") or os.environ.get("SANDBOX_FUSION_ENDPOINT")
    if path:
        connection = _UnixConnection(path, timeout + 30)
    elif url:
        host = url.split("://", 1)[-1].split("/", 1)[0]
        connection = http.client.HTTPConnection(host, timeout=timeout + 30)
    else:
        raise RuntimeError("rwb's E2B stand-in runs in rwb's workers, which reach rwb's sandbox; none is set here")
    try:
        connection.request("POST", "/execute_batch", body, {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
    finally:
        connection.close()
    if response.status != 200:
        raise RuntimeError("rwb's sandbox answered %d: %s" % (response.status, data[:300].decode("utf-8", "replace")))
    return json.loads(data)[0]


class Sandbox:
    """A sandbox as E2B's synchronous client offers one: `run_code`, `kill`."""

    def __init__(self, timeout=300, request_timeout=None, **kwargs):
        self.sandbox_id = "rwb-%s" % uuid.uuid4().hex[:12]
        self.timeout = float(timeout or 300)

    @classmethod
    def create(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    def run_code(self, code, language=None, languages=None, timeout=None, **kwargs):
        answer = _execute(code, float(timeout or self.timeout))
        if answer.get("execution") is None:
            raise RuntimeError(answer.get("exception_str") or "the cell did not run")
        return Execution.from_answer(answer)

    def kill(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.kill()


class AsyncSandbox:
    """The async client open-r1 uses: `await AsyncSandbox.create(...)`, `await
    sandbox.run_code(script)`, `await sandbox.kill()`."""

    def __init__(self, timeout=300, request_timeout=None, **kwargs):
        self._sync = Sandbox(timeout, request_timeout, **kwargs)
        self.sandbox_id = self._sync.sandbox_id

    @classmethod
    async def create(cls, *args, **kwargs):
        return cls(*args, **kwargs)

    async def run_code(self, code, language=None, languages=None, timeout=None, **kwargs):
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, lambda: self._sync.run_code(code, timeout=timeout))

    async def kill(self):
        return True

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.kill()
