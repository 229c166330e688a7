"""A small client of Chromium's DevTools protocol, for the browser tests of
the HTML report (report_test.py) and the first-paint benchmark
(bench/html_first_paint.py).

It starts Debian's headless `chromium` with a private profile and
--remote-debugging-port=0, reads the port from the profile's
DevToolsActivePort file, and talks to the page over Debian's
python3-websocket. Only what the tests need: commands, the events they wait
for, and the console messages and exceptions seen so far.

    with Browser(profile_dir) as browser:
        page = browser.page()
        page.navigate("file:///tmp/report.html")
        page.evaluate("document.title")

CannotStart is raised (and only then) when chromium is not installed or does
not come up: the callers turn it into a skip. Everything else is an error.
"""
import json
import os
import shutil
import subprocess
import time
import urllib.request

CHROMIUM = "/usr/bin/chromium"


class CannotStart(Exception):
    """chromium is missing, or exited or hung before its DevTools endpoint came up."""


class ProtocolError(Exception):
    pass


class Page:
    def __init__(self, ws_url):
        import websocket  # Debian's python3-websocket

        self._ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self._next_id = 0
        self.events = []  # every event received, in order
        self.console = []  # "level: text" of console messages and exceptions

    def close(self):
        try:
            self._ws.close()
        except Exception:  # noqa: BLE001 - closing a dead socket is fine
            pass

    def _record(self, message):
        self.events.append(message)
        method = message.get("method")
        params = message.get("params", {})
        if method == "Runtime.consoleAPICalled":
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            self.console.append(f"{params.get('type')}: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exc = details.get("exception", {})
            self.console.append(f"exception: {details.get('text')} {exc.get('description', '')}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            self.console.append(f"{entry.get('level')}: {entry.get('text')} ({entry.get('url', '')})")

    def send(self, method, **params):
        self._next_id += 1
        mine = self._next_id
        self._ws.send(json.dumps({"id": mine, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == mine:
                if "error" in message:
                    raise ProtocolError(f"{method}: {message['error']}")
                return message.get("result", {})
            self._record(message)

    def wait_event(self, method, timeout=60):
        for i, message in enumerate(self.events):
            if message.get("method") == method:
                del self.events[i]
                return message.get("params", {})
        deadline = time.time() + timeout
        while time.time() < deadline:
            message = json.loads(self._ws.recv())
            if "id" in message:
                continue
            self._record(message)
            if message.get("method") == method:
                self.events.remove(message)
                return message.get("params", {})
        raise ProtocolError(f"no {method} within {timeout} s")

    def evaluate(self, expression):
        """The value of a JavaScript expression (awaited when a promise)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            raise ProtocolError(
                f"{expression!r} threw: {details.get('text')} "
                f"{details.get('exception', {}).get('description', '')}"
            )
        return result.get("result", {}).get("value")

    def navigate(self, url, timeout=60):
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Log.enable")
        self.send("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)

    def mouse(self, kind, x, y, **extra):
        self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def click(self, x, y):
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)

    def screenshot(self, path, clip=None):
        import base64

        params = {"format": "png"}
        if clip is not None:
            params["clip"] = dict(clip, scale=1)
        data = self.send("Page.captureScreenshot", **params)["data"]
        with open(path, "wb") as out:
            out.write(base64.b64decode(data))


class Browser:
    def __init__(self, profile_dir, width=1280, height=900):
        self.profile = profile_dir
        self.width, self.height = width, height
        self.proc = None
        self.port = None

    def __enter__(self):
        if not os.access(CHROMIUM, os.X_OK):
            raise CannotStart(f"{CHROMIUM} is not installed (Debian package chromium)")
        shutil.rmtree(self.profile, ignore_errors=True)
        os.makedirs(self.profile)
        self._log = open(os.path.join(self.profile, "..", "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--hide-scrollbars", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--user-data-dir={self.profile}",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 45
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise CannotStart(f"chromium exited with status {self.proc.returncode} before its "
                                  f"DevTools endpoint came up: {self._log_tail()}")
            try:
                with open(port_file) as f:
                    first = f.readline().strip()
                if first:
                    self.port = int(first)
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        if self.port is None:
            self.__exit__(None, None, None)
            raise CannotStart(f"chromium's DevTools endpoint did not come up in 45 s: {self._log_tail()}")
        return self

    def _log_tail(self):
        try:
            self._log.flush()
            with open(self._log.name, "rb") as f:
                return f.read()[-800:].decode("utf-8", "replace").strip()
        except OSError:
            return ""

    def page(self):
        """The first page target (the about:blank chromium opened)."""
        deadline = time.time() + 30
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=10) as r:
                targets = json.load(r)
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return Page(pages[0]["webSocketDebuggerUrl"])
            if time.time() > deadline:
                raise ProtocolError("chromium has no page target")
            time.sleep(0.1)

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        return False
