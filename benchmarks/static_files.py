"""Static files under ``toolnexus_serve``: the app's own handler
(``toolnexus_django/staticfiles.py``) against ServeStatic and Starlette's ``StaticFiles``.

Each candidate is ``manage.py toolnexus_serve`` (2 workers, SQLite) with the
testproject's settings (``benchmarks/static_settings.py``): the app's handler as
shipped, or ``--no-static`` with ``ASGI_APPLICATION`` one of
``benchmarks/static_apps.py``. The admin's files are served from a ``STATIC_ROOT``
that ``collectstatic`` filled, or ("finders") from an empty one, so the apps'
``static/`` directories serve. Each server is checked first (the bytes on disk,
a Content-Type, a validator that a conditional GET answers with 304), then
loaded with wrk (-t2 -c16; 2 s warm-up, then measured) for each file; the
server's CPU (all its processes, /proc) is read around the measured run.
Rounds are interleaved, so a noisy neighbour hits every candidate alike; the
table shows the best round's req/s and the lowest CPU per request.

    .venv/bin/python benchmarks/static_files.py                  # 2 rounds, 6 s per load
    .venv/bin/python benchmarks/static_files.py --only ServeStatic --rounds 1 --duration 2

Needs wrk, and servestatic and starlette installed (``pip install servestatic``;
starlette comes with toolnexus's mcp). Results: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from servers import PY, Server, card_ready, free_port, group_cpu_seconds, machine, wait_until

ROOT = Path(__file__).resolve().parent.parent
MANAGE = str(ROOT / "manage.py")
APPS = "benchmarks.static_apps."


@dataclass
class Candidate:
    name: str
    app: str | None  # ASGI_APPLICATION, or None: the app's own handler
    collected: bool  # STATIC_ROOT filled by collectstatic, else the finders serve


CANDIDATES = [
    Candidate("app handler, STATIC_ROOT", None, True),
    Candidate("app handler, finders", None, False),
    Candidate("ServeStatic, STATIC_ROOT", APPS + "servestatic_root", True),
    Candidate("ServeStatic, finders", APPS + "servestatic_finders", False),
    Candidate("Starlette StaticFiles, STATIC_ROOT", APPS + "starlette_root", True),
]

#: (name, path below /static/, conditional: a GET with the file's validator -> 304)
LOADS = [
    ("base.css 200", "admin/css/base.css", False),
    ("jquery.js 200", "admin/js/vendor/jquery/jquery.js", False),
    ("base.css 304", "admin/css/base.css", True),
]

WRK_SCRIPT = """
%(headers)s
bad = 0
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status ~= %(status)d then bad = bad + 1 end
end
function done(summary, latency, requests)
  local n = 0
  for _, t in ipairs(threads) do n = n + t:get("bad") end
  io.write(string.format("BAD %%d\\nP50_US %%d\\n", n, latency:percentile(50)))
end
"""


@dataclass
class Run:
    rps: float
    cpu_ms: float
    p50_ms: float
    bad: int


def wrk(
    url: str, seconds: float, validator: tuple[str, str] | None
) -> tuple[float, int, float, int]:
    """(req/s, requests, p50 ms, bad answers) of one wrk run."""
    headers = f'wrk.headers["{validator[0]}"] = {validator[1]!r}' if validator else ""
    status = 304 if validator else 200
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(WRK_SCRIPT % {"headers": headers, "status": status})
    try:
        out = subprocess.run(
            ["wrk", "-t2", "-c16", f"-d{seconds:.0f}s", "-s", f.name, url],
            capture_output=True, text=True, timeout=seconds + 30, check=True,
        ).stdout  # fmt: skip
    finally:
        os.unlink(f.name)

    def grab(pattern: str) -> str:
        m = re.search(pattern, out)
        return m.group(1) if m else "0"

    return (
        float(grab(r"Requests/sec:\s+([\d.]+)")),
        int(grab(r"(\d+) requests in")),
        int(grab(r"P50_US (\d+)")) / 1000,
        int(grab(r"BAD (\d+)")),
    )


def check(base: str, source: Path, relative: str) -> tuple[str, str]:
    """The file is served as it is on disk; returns the validator to send back."""
    with urllib.request.urlopen(f"{base}/static/{relative}", timeout=5) as r:
        body, headers = r.read(), r.headers
    if body != (source / relative).read_bytes():
        raise RuntimeError(f"{relative}: not the bytes on disk")
    if not headers.get("content-type", "").startswith(
        ("text/css", "text/javascript", "application/javascript")
    ):
        raise RuntimeError(f"{relative}: content-type {headers.get('content-type')!r}")
    validator = ("If-None-Match", headers["etag"]) if headers.get("etag") else (
        "If-Modified-Since", headers["last-modified"])  # fmt: skip
    request = urllib.request.Request(f"{base}/static/{relative}", headers=dict([validator]))
    try:
        urllib.request.urlopen(request, timeout=5)
        raise RuntimeError(f"{relative}: a conditional GET was not answered with 304")
    except urllib.error.HTTPError as e:
        if e.code != 304:
            raise
    return validator


def measure(cand: Candidate, env: dict[str, str], dirs: dict[bool, Path], source: Path,
            args: argparse.Namespace, log: Path) -> dict[str, Run]:  # fmt: skip
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**env, "BENCH_STATIC_ROOT": str(dirs[cand.collected])}
    argv = [PY, MANAGE, "toolnexus_serve", f"127.0.0.1:{port}", "--workers", "2"]
    if cand.app:
        env["BENCH_ASGI_APPLICATION"] = cand.app
        argv.append("--no-static")
    runs = {}
    with Server(argv, env, log) as server:
        wait_until(lambda: card_ready(base), 60, cand.name)
        assert server.proc is not None
        for name, relative, conditional in LOADS:
            validator = check(base, source, relative)
            url = f"{base}/static/{relative}"
            sent = validator if conditional else None
            wrk(url, args.warmup, sent)
            cpu0 = group_cpu_seconds(server.proc.pid)
            rps, requests, p50, bad = wrk(url, args.duration, sent)
            cpu = group_cpu_seconds(server.proc.pid) - cpu0
            runs[name] = Run(rps, cpu * 1000 / max(1, requests), p50, bad)
        server.stop()
    return runs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--only", nargs="*", default=[], help="candidates whose name contains one of these"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--duration", type=float, default=6, help="measured seconds per load")
    parser.add_argument("--warmup", type=float, default=2)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tnx-static-"))
    dirs = {True: work / "collected", False: work / "empty"}
    dirs[False].mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLM_")}
    env.update({
        "DJANGO_SETTINGS_MODULE": "benchmarks.static_settings",
        "BENCH_STATIC_ROOT": str(dirs[True]),
        "DATABASE_URL": f"sqlite:///{work / 'bench.sqlite3'}",
        "TOOLNEXUS_LOG_LEVEL": "WARNING",
    })  # fmt: skip
    subprocess.run([PY, MANAGE, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    subprocess.run([PY, MANAGE, "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    source = dirs[True]
    for line in machine():
        print(line)
    print(f"wrk -t2 -c16, {args.warmup:.0f} s warm-up + {args.duration:.0f} s per load, "
          f"{args.rounds} rounds; logs in {work}")  # fmt: skip

    chosen = [c for c in CANDIDATES if not args.only or any(o in c.name for o in args.only)]
    results: dict[str, list[dict[str, Run]]] = {c.name: [] for c in chosen}
    for round_ in range(1, args.rounds + 1):
        print(f"round {round_} (load average {os.getloadavg()[0]:.2f})", flush=True)
        for cand in chosen:
            slug = re.sub(r"\W+", "_", cand.name)
            runs = measure(cand, env, dirs, source, args, work / f"{slug}-{round_}.log")
            results[cand.name].append(runs)
            shown = "; ".join(f"{n} {r.rps:.0f} req/s {r.cpu_ms:.3f} ms" for n, r in runs.items())
            print(f"  {cand.name:<36} {shown}", flush=True)

    print("\n| server | file | req/s (best) | CPU ms/req (lowest) | p50 ms | bad |")
    print("|---|---|---:|---:|---:|---:|")
    for cand in chosen:
        for name, _, _ in LOADS:
            runs = [r[name] for r in results[cand.name]]
            best = max(runs, key=lambda r: r.rps)
            cpu = min(r.cpu_ms for r in runs)
            bad = sum(r.bad for r in runs)
            shown = f"{best.rps:,.0f} | {cpu:.3f} | {best.p50_ms:.2f} | {bad}"
            print(f"| {cand.name} | {name} | {shown} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
