#!/usr/bin/env python3
"""One headless Chromium for the inspector test, in place of a browser started for each page.

    browser.py serve SOCKET        starts Chromium, listens on the Unix socket SOCKET, prints "ready" once it can
                                   take requests, and serves them one at a time until it is ended
    browser.py dom URL [SOCKET]    prints the document as the page's script left it (Chromium's --dump-dom)
    browser.py shot URL PNG [SOCKET]  writes a 1400x860 screenshot of the page

Each page opens in a new tab and runs for 5,000 ms of virtual time (Chromium's --virtual-time-budget: timers run
at once, in order), then is read and closed. Chromium is driven over the DevTools protocol on a pipe
(--remote-debugging-pipe: file descriptors 3 and 4, messages ended by a NUL byte), so nothing but Python's standard
library is needed. Starting Chromium took most of the four seconds of each page the test opened before.
"""

import base64
import json
import os
import signal
import socket
import subprocess
import sys

BUDGET_MS = 5000
WIDTH, HEIGHT = 1400, 860


class Browser:
    def __init__(self):
        to_browser, self.writer = os.pipe()
        self.reader, from_browser = os.pipe()
        # Above 4, so that placing them at 3 and 4 in the child overwrites neither.
        to_browser, from_browser = fcntl_dup(to_browser), fcntl_dup(from_browser)

        def place():
            os.dup2(to_browser, 3)
            os.dup2(from_browser, 4)

        self.process = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--window-size={WIDTH},{HEIGHT}", "about:blank"],
            preexec_fn=place, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self.buffer = b""
        self.pending = []
        self.last_id = 0

    def read(self):
        while b"\0" not in self.buffer:
            chunk = os.read(self.reader, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed its pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def wait(self, match):
        """The first message, kept or new, that `match` accepts; the others are kept for later waits."""
        for index, message in enumerate(self.pending):
            if match(message):
                return self.pending.pop(index)
        while True:
            message = self.read()
            if match(message):
                return message
            if "method" in message:  # events; answers to earlier commands are not waited for again
                self.pending.append(message)

    def send(self, method, params=None, session=None):
        self.last_id += 1
        command = {"id": self.last_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = session
        os.write(self.writer, json.dumps(command).encode() + b"\0")
        identifier = self.last_id
        answer = self.wait(lambda message: message.get("id") == identifier)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return answer["result"]

    def page(self, url, read):
        """Opens `url` in a new tab, lets it run for the budget of virtual time, and returns `read(session)`."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        try:
            session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False}, session)
            self.send("Emulation.setScrollbarsHidden", {"hidden": True}, session)
            self.send("Emulation.setVirtualTimePolicy", {"policy": "pause"}, session)
            self.send("Page.navigate", {"url": url}, session)
            self.send("Emulation.setVirtualTimePolicy",
                      {"policy": "pauseIfNetworkFetchesPending", "budget": BUDGET_MS}, session)
            self.wait(lambda message: message.get("method") == "Emulation.virtualTimeBudgetExpired"
                      and message.get("sessionId") == session)
            return read(session)
        finally:
            self.send("Target.closeTarget", {"targetId": target})

    def dom(self, url):
        def read(session):
            result = self.send("Runtime.evaluate", {
                "expression": "document.documentElement.outerHTML", "returnByValue": True}, session)
            return result["result"]["value"].encode()
        return self.page(url, read)

    def shot(self, url):
        def read(session):
            return base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"}, session)["data"])
        return self.page(url, read)


def fcntl_dup(fd):
    import fcntl
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


def serve(path):
    # Ended by the test's script: Chromium goes with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    browser = Browser()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    browser.send("Target.getTargets")  # answered once Chromium runs
    print("ready", flush=True)
    sys.stdout.close()
    try:
        while True:
            connection, _ = server.accept()
            with connection:
                request = b""
                while not request.endswith(b"\n"):
                    chunk = connection.recv(1 << 16)
                    if not chunk:
                        break
                    request += chunk
                kind, url = json.loads(request)
                try:
                    body = browser.dom(url) if kind == "dom" else browser.shot(url)
                    connection.sendall(b"ok\n" + body)
                except Exception as error:  # the client reports it and fails
                    connection.sendall(f"error {error}\n".encode())
    finally:
        browser.process.kill()


def request(kind, url, path):
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(120)
    client.connect(path)
    client.sendall(json.dumps([kind, url]).encode() + b"\n")
    answer = b""
    while True:
        chunk = client.recv(1 << 16)
        if not chunk:
            break
        answer += chunk
    status, _, body = answer.partition(b"\n")
    if status != b"ok":
        sys.exit(f"browser: {kind} {url}: {status.decode(errors='replace') or 'no answer'}")
    return body


def main():
    command = sys.argv[1]
    default_socket = os.environ.get("INSPECTOR_BROWSER_SOCKET", "")
    if command == "serve":
        serve(sys.argv[2])
    elif command == "dom":
        sys.stdout.buffer.write(request("dom", sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else default_socket))
    elif command == "shot":
        png = request("shot", sys.argv[2], sys.argv[4] if len(sys.argv) > 4 else default_socket)
        with open(sys.argv[3], "wb") as file:
            file.write(png)
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main()
