#!/usr/bin/env python3
"""Start time of two webview probes: Popen -> the page's DOMContentLoaded fetch('/ready').

    python3 measure.py WRY_BIN TAURI_BIN [RUNS]

A loopback HTTP server (a thread) serves a small static page whose inline script fetches
/ready on DOMContentLoaded; the server records when /ready arrives. One Xvfb and one private
session bus (dbus-daemon) for all runs; each run gets a fresh HOME/XDG dirs (cold WebKit
caches, the same for both probes). After each run the probe's process group is killed, and
every process descended from it (WebKit's web and network processes, bwrap) is killed and
reaped; the harness is a child subreaper so no orphan escapes. Order: one warm-up each, then
A B A B ... RUNS each.
"""
import ctypes, http.server, os, shutil, signal, statistics, subprocess, sys, tempfile, threading, time

A_BIN, B_BIN = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 15
TIMEOUT = 60.0
LOGDIR = tempfile.mkdtemp(prefix="probe-logs-")

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>probe</title>
<script>
document.addEventListener('DOMContentLoaded', function () {
  fetch('/ready' + location.search, {cache: 'no-store'});
});
</script></head><body><p>probe page</p></body></html>"""

arrivals = {}  # run id -> monotonic time of /ready
arrived = threading.Condition()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        now = time.monotonic()
        path, _, query = self.path.partition("?")
        if path == "/ready":
            with arrived:
                arrivals.setdefault(query, now)
                arrived.notify_all()
            body, ctype = b"ok", "text/plain"
        elif path == "/":
            body, ctype = PAGE, "text/html; charset=utf-8"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def ppid_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()
        return int(fields[1]), fields[0]  # ppid, state
    except (OSError, ValueError, IndexError):
        return None, None


def descendants(roots, exclude):
    """Live (non-zombie) processes descended from any pid in roots, not under exclude."""
    parent = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid, state = ppid_of(int(name))
            if ppid is not None and state != "Z":
                parent[int(name)] = ppid
    found = set()
    for pid in parent:
        p, chain = pid, []
        while p in parent and p not in roots and p not in exclude and p > 1:
            chain.append(p)
            p = parent[p]
        if p in roots and pid not in roots:
            found.update(q for q in chain)
    return found


def reap_children():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]

    xvfb = subprocess.Popen(["Xvfb", "-displayfd", "1", "-nolisten", "tcp", "-screen", "0", "1280x900x24"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    display = ":" + xvfb.stdout.readline().decode().strip()
    bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    address = bus.stdout.readline().decode().strip()
    keep = {xvfb.pid, bus.pid}
    print(f"Xvfb {display} (pid {xvfb.pid}), bus pid {bus.pid}, http port {port}, logs {LOGDIR}", flush=True)

    me = os.getpid()
    times = {"A": [], "B": []}
    stragglers = {"A": 0, "B": 0}
    seq = [("A", "warm"), ("B", "warm")] + [(p, i) for i in range(RUNS) for p in ("A", "B")]
    try:
        for n, (probe, label) in enumerate(seq):
            binary = A_BIN if probe == "A" else B_BIN
            run_id = f"n={n}"
            url = f"http://127.0.0.1:{port}/?{run_id}"
            tmp = tempfile.mkdtemp(prefix="probe-run-")
            env = {"PATH": os.environ["PATH"], "HOME": tmp, "DISPLAY": display,
                   "DBUS_SESSION_BUS_ADDRESS": address, "XDG_RUNTIME_DIR": tmp,
                   "XDG_DATA_HOME": os.path.join(tmp, "data"), "XDG_CACHE_HOME": os.path.join(tmp, "cache"),
                   "XDG_CONFIG_HOME": os.path.join(tmp, "config")}
            os.chmod(tmp, 0o700)
            log = open(os.path.join(LOGDIR, f"{n:02d}-{probe}-{label}.log"), "wb")
            t0 = time.monotonic()
            proc = subprocess.Popen([binary, url], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
            with arrived:
                arrived.wait_for(lambda: run_id in arrivals, timeout=TIMEOUT)
            t1 = arrivals.get(run_id)
            # kill: the group, then whatever descends from the probe (or was orphaned to us)
            tree = descendants({proc.pid}, keep)
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            for pid in tree:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait()
            extra = 0
            for _ in range(100):
                left = descendants({proc.pid, me}, keep) - {me}
                if not left:
                    break
                extra += len(left - tree)
                if os.environ.get("PROBE_DEBUG"):
                    for pid in sorted(left):
                        try:
                            comm = open(f"/proc/{pid}/comm").read().strip()
                        except OSError:
                            comm = "?"
                        print(f"    left: {pid} {comm} ppid={ppid_of(pid)}", flush=True)
                for pid in left:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
                reap_children()
            else:
                print(f"  WARNING: processes left after run {n}: {sorted(left)}", flush=True)
            reap_children()
            log.close()
            shutil.rmtree(tmp, ignore_errors=True)
            stragglers[probe] += extra
            if t1 is None:
                print(f"{probe} {label}: TIMEOUT ({TIMEOUT:.0f} s), killed {len(tree)} descendants", flush=True)
                continue
            ms = (t1 - t0) * 1000
            print(f"{probe} {label}: {ms:7.1f} ms  (killed pgid + {len(tree)} descendants)", flush=True)
            if label != "warm":
                times[probe].append(ms)
    finally:
        for p in (xvfb, bus):
            p.terminate()
            p.wait()
        server.shutdown()

    print()
    names = {"A": os.path.basename(A_BIN), "B": os.path.basename(B_BIN)}
    med = {}
    for probe in ("A", "B"):
        t = times[probe]
        if not t:
            print(f"{probe} {names[probe]}: no successful runs")
            continue
        med[probe] = statistics.median(t)
        print(f"{probe} {names[probe]}: n={len(t)} median {med[probe]:.1f} ms, min {min(t):.1f}, "
              f"max {max(t):.1f}  all: {[round(x) for x in t]}")
    if len(med) == 2:
        print(f"ratio of medians B/A ({names['B']}/{names['A']}): {med['B'] / med['A']:.3f}")
    print(f"late stragglers killed after the group kill: {stragglers}")


if __name__ == "__main__":
    main()
