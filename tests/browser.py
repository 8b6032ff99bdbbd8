"""Drives a real headless Chromium over the DevTools protocol (websocket-client, no browser download).

Used by the HTML tests and benchmarks/html_scale.py. `find_chromium()` returns None where no
browser is installed (Debian: `apt-get install chromium`), and the tests skip with that reason.

Responsiveness: `watch_main_thread()` installs, before any script of the next page runs, observers of the
browser's own long-task timing (every main-thread task over 50 ms) and paint timing; `long_tasks()` and
`paint_ms()` read them back, and `visit_sections()` scrolls a page to each of its sections as a reader would.

Errors are collected from every frame: Chromium runs a sandboxed iframe (the CPU profile) in a process
of its own, whose console the page's DevTools session does not see, so the harness auto-attaches to
every such target (flattened sessions) and listens there too.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # WebGL without a GPU: Chromium only falls back to its software renderer when told to.
    "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
    "--allow-file-access-from-files", "--remote-debugging-port=0",
]


def find_chromium() -> str | None:
    env = os.environ.get("GRAPHMODE_CHROMIUM")
    if env:
        return env
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


# Runs in every new document before its own scripts (Page.addScriptToEvaluateOnNewDocument).
_WATCH_MAIN_THREAD = """(() => {
  const tasks = window.__gmLongTasks = [], paints = window.__gmPaints = {};
  try {
    new PerformanceObserver((list) => { for (const e of list.getEntries()) tasks.push([e.startTime, e.duration]); })
      .observe({ type: "longtask", buffered: true });
    new PerformanceObserver((list) => { for (const e of list.getEntries()) paints[e.name] = e.startTime; })
      .observe({ type: "paint", buffered: true });
  } catch (e) { window.__gmWatchError = String(e); }
})();"""


class Chromium:
    """One headless browser with one page; collects JavaScript errors and dialogs as they happen."""

    def __init__(self, width: int = 1400, height: int = 1000):
        import websocket

        exe = find_chromium()
        if exe is None:
            raise RuntimeError("no Chromium found; install Debian's `chromium` package")
        self._profile = tempfile.mkdtemp(prefix="gm-chromium-")
        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().count("\n") >= 1):
            if time.monotonic() > deadline or self._proc.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not start its DevTools endpoint within 30 s")
            time.sleep(0.05)
        port = int(port_file.read_text().splitlines()[0])
        targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10).read())
        page = next(t for t in targets if t.get("type") == "page")
        self._ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=60, suppress_origin=True)
        self._next_id = 0
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.events: list[dict[str, Any]] = []
        self.frames: list[str] = []  # sessions of out-of-process frames (the sandboxed CPU-profile iframe)
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.send(method)
        self.send("Target.setAutoAttach", autoAttach=True, waitForDebuggerOnStart=True, flatten=True)
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def _handle_event(self, msg: dict[str, Any]) -> None:
        method = msg.get("method", "")
        params = msg.get("params", {})
        self.events.append(msg)
        where = " (in a frame)" if msg.get("sessionId") else ""
        if method == "Target.attachedToTarget":
            session = params["sessionId"]
            self.frames.append(session)
            # Listen in the new frame before it runs, then let it run (it waits: waitForDebuggerOnStart).
            for m in ("Runtime.enable", "Log.enable"):
                self._post(m, session)
            self._post("Target.setAutoAttach", session, autoAttach=True, waitForDebuggerOnStart=True, flatten=True)
            self._post("Runtime.runIfWaitingForDebugger", session)
            return
        if method == "Runtime.exceptionThrown":
            d = params.get("exceptionDetails", {})
            self.errors.append(str(d.get("exception", {}).get("description") or d.get("text")) + where)
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            self.errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])) + where)
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            self.errors.append(f"{entry.get('source')}: {entry.get('text')}{where}")
        elif method == "Page.javascriptDialogOpening":
            self.dialogs.append(str(params.get("message")))
            # Answer it without blocking on it: the page must go on so the test can see the dialog.
            self._ws.send(json.dumps({"id": 10**9 + len(self.dialogs), "method": "Page.handleJavaScriptDialog",
                                      "params": {"accept": True}}))

    def _post(self, method: str, session: str | None = None, **params: Any) -> int:
        """Sends a command without waiting for its answer (answers to it are skipped when they come)."""
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._ws.send(json.dumps(msg))
        return self._next_id

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        call_id = self._post(method, session, **params)
        while True:
            msg = json.loads(self._ws.recv())
            if msg.get("id") == call_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return dict(msg.get("result", {}))
            if "method" in msg:
                self._handle_event(msg)

    def pump(self, seconds: float) -> None:
        """Reads events for a while (errors from frames that are still starting arrive this way)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.evaluate("1")
            time.sleep(0.05)

    def evaluate(self, expression: str, session: str | None = None) -> Any:
        result = self.send("Runtime.evaluate", session, expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression!r}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def open(self, path: Path, timeout_s: float = 60.0) -> dict[str, Any]:
        """Loads a file and waits until the report says it has drawn; returns window.graphmode."""
        self.send("Page.navigate", url=path.resolve().as_uri())
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            state = self.evaluate("window.graphmode ? JSON.stringify(window.graphmode) : null")
            if state:
                return dict(json.loads(state))
            time.sleep(0.05)
        raise TimeoutError(f"{path} did not finish drawing within {timeout_s} s; errors: {self.errors}")

    def watch_main_thread(self) -> None:
        """From the next page on: record every long task (over 50 ms) and the paint timings (see long_tasks)."""
        self.send("Page.addScriptToEvaluateOnNewDocument", source=_WATCH_MAIN_THREAD)

    def long_tasks(self) -> list[tuple[float, float]]:
        """(start, duration) in ms since navigation of every main-thread task over 50 ms so far (watch_main_thread)."""
        error = self.evaluate("window.__gmWatchError || null")
        if error:
            raise RuntimeError(f"this Chromium has no long-task timing: {error}")
        return [(float(a), float(b)) for a, b in self.evaluate("window.__gmLongTasks || []")]

    def paint_ms(self, name: str = "first-contentful-paint") -> float | None:
        """When the page painted ('first-paint', 'first-contentful-paint'), ms since navigation; None: not yet."""
        value = self.evaluate(f"(window.__gmPaints || {{}})[{json.dumps(name)}] ?? null")
        return None if value is None else float(value)

    def navigate(self, path: Path) -> None:
        """Starts loading a file and returns at once (open() waits until the report has drawn)."""
        self.send("Page.navigate", url=path.resolve().as_uri())

    def visit_sections(self, selector: str = "section, .plot, .timeline", pause_s: float = 0.25) -> int:
        """Scrolls each element of the page matching `selector` into view in turn, as a reader scrolling down
        would, letting a frame be drawn and `pause_s` pass at each; returns how many it visited."""
        n = int(self.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length"))
        for k in range(n):
            self.evaluate(f"document.querySelectorAll({json.dumps(selector)})[{k}].scrollIntoView({{block: 'start'}})")
            self.next_frame()
            time.sleep(pause_s)
        return n

    # Real input, as a person gives it: the browser turns these into pointer, wheel and click events.
    def mouse_move(self, x: float, y: float, buttons: int = 0) -> None:
        self.send("Input.dispatchMouseEvent", type="mouseMoved", x=x, y=y, buttons=buttons,
                  button="left" if buttons else "none")

    def wheel(self, x: float, y: float, delta_y: float = 0.0, delta_x: float = 0.0) -> None:
        self.send("Input.dispatchMouseEvent", type="mouseWheel", x=x, y=y, deltaX=delta_x, deltaY=delta_y)

    def drag(self, x0: float, y0: float, x1: float, y1: float, steps: int = 8) -> None:
        self.mouse_move(x0, y0)
        self.send("Input.dispatchMouseEvent", type="mousePressed", x=x0, y=y0, button="left", buttons=1, clickCount=1)
        for k in range(1, steps + 1):
            self.mouse_move(x0 + (x1 - x0) * k / steps, y0 + (y1 - y0) * k / steps, buttons=1)
        self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x1, y=y1, button="left", buttons=0, clickCount=1)

    def click(self, x: float, y: float, count: int = 1) -> None:
        for k in range(1, count + 1):
            self.send("Input.dispatchMouseEvent", type="mousePressed", x=x, y=y, button="left", buttons=1, clickCount=k)
            self.send("Input.dispatchMouseEvent", type="mouseReleased", x=x, y=y, button="left", buttons=0, clickCount=k)

    def next_frame(self) -> None:
        """Returns once the page has drawn a frame after everything sent so far."""
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))")

    def screenshot(self, out: Path, full_page: bool = True) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            metrics = self.send("Page.getLayoutMetrics")
            size = metrics.get("cssContentSize") or metrics["contentSize"]
            params["clip"] = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
        data = self.send("Page.captureScreenshot", **params)["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        try:
            if getattr(self, "_ws", None) is not None:
                self._ws.close()
        finally:
            if self._proc.poll() is None:
                self._proc.terminate()
                try:
                    self._proc.wait(10)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait(10)
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
