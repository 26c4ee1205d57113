# Start time of gg-desktop (docs/performance.md, "Desktop app"): a WebDriver session requested
# -> the sessions view's "New session" button is in the page. Not run by cargo.
#   python3 desktop/tests/measure_start.py target/release/gg-desktop 7
# The shell runs the `gg` beside it (a symlink to a built gg will do).
import urllib.error, json, os, subprocess, sys, tempfile, time, urllib.request, socket, statistics

binary = sys.argv[1]
runs = int(sys.argv[2])

def call(port, method, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as e:
        return json.loads(e.read())

xvfb = subprocess.Popen(["Xvfb", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1280x900x24"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
display = ":" + xvfb.stdout.readline().decode().strip()
bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
address = bus.stdout.readline().decode().strip()
times = []
try:
    for i in range(runs):
        tmp = tempfile.mkdtemp()
        home = os.path.join(tmp, "home"); repo = os.path.join(tmp, "repo")
        os.makedirs(os.path.join(home, ".gg")); os.makedirs(repo)
        json.dump({"default": "local:m", "providers": {"local": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "k", "models": ["m"]}}}, open(os.path.join(home, ".gg/config.json"), "w"))
        s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
        env = {"PATH": os.environ["PATH"], "HOME": home, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": tmp}
        driver = subprocess.Popen(["WebKitWebDriver", f"--port={port}"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            try:
                call(port, "GET", "/status"); break
            except Exception:
                time.sleep(0.05)
        t0 = time.perf_counter()
        sid = call(port, "POST", "/session", {"capabilities": {"alwaysMatch": {"webkitgtk:browserOptions": {"binary": binary, "args": ["--automation", "--workspace", repo]}}}})["value"]["sessionId"]
        while True:
            v = call(port, "POST", f"/session/{sid}/element", {"using": "xpath", "value": "//button[normalize-space()='New session']"})["value"]
            if any(k.startswith("element-") for k in v):
                break
            time.sleep(0.02)
        times.append((time.perf_counter() - t0) * 1000)
        try:
            call(port, "DELETE", f"/session/{sid}")
        except Exception:
            pass
        driver.terminate(); driver.wait()
    print("ms:", [round(t) for t in times], "median", round(statistics.median(times)))
finally:
    xvfb.terminate(); bus.terminate()
