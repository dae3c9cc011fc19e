"""neuronize performance benchmark: every ratio the performance targets name, measured in one run.

    python benchmarks/bench.py                       # a generated corpus of 1000 files
    python benchmarks/bench.py --corpus /tmp/corpus  # any directory (repeatable), e.g. cloned repos
    python benchmarks/bench.py --generate 4000 --mb 80 --runs 1   # the 80 MB memory target

Not part of the test suite. See benchmarks/README.md for what each row means.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

GNU_TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


# -- measuring one subprocess --------------------------------------------------------------
@dataclass
class Sample:
    seconds: float
    returncode: int
    max_rss_mb: float  # the largest single process of the tree (wait4's ru_maxrss)
    tree_rss_mb: float  # the largest sum over the whole process tree, sampled every 20 ms
    stderr: str = ""


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _tree_rss(pid: int) -> int:
    children = _children_map()
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm", "rb") as handle:
                total += int(handle.read().split()[1]) * PAGE
        except OSError:
            pass
        todo.extend(children.get(p, ()))
    return total


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> Sample:
    """Wall time, exit code and peak memory of ``cmd`` (stdout discarded, stderr kept)."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    # An installed package has its bytecode (pip compiles it, libcst's included): a
    # PYTHONDONTWRITEBYTECODE environment would make neuronize alone compile its ~100 modules
    # from source on every start (about 0.7 s here), which no user pays.
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)
    err = tempfile.TemporaryFile()
    # ru_maxrss of a child forked from this (large) process starts at this process's size, so the
    # per-process peak comes from GNU time, which forks from a tiny process, where it exists.
    rss_file = None
    if GNU_TIME:
        fd, rss_file = tempfile.mkstemp(prefix="bench-rss-")
        os.close(fd)
        cmd = [GNU_TIME, "-q", "-f", "%M", "-o", rss_file, *cmd]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                            env=full_env, cwd=cwd)
    peak = [0]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            if os.path.isdir("/proc"):
                peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.02)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    done.set()
    poller.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    err.seek(0)
    stderr = err.read().decode(errors="replace")
    err.close()
    max_rss_kb = float(usage.ru_maxrss)
    if rss_file is not None:
        try:
            max_rss_kb = float(Path(rss_file).read_text().split()[-1])
        except (OSError, ValueError, IndexError):
            max_rss_kb = float("nan")
        os.unlink(rss_file)
    return Sample(seconds, proc.returncode, max_rss_kb / 1024, peak[0] / 2**20, stderr)


# -- the floor: libcst parse of the pre-filtered files, same workers as neuronize ----------------
def _parse_one(path: str) -> int:
    import libcst

    try:
        libcst.parse_module(Path(path).read_bytes())
    except Exception:  # noqa: BLE001 - a file neuronize reports as an error costs a parse too
        return 0
    return 1


def floor_main(list_file: str, workers: int, threshold: int) -> None:
    """The floor, run in its own interpreter so it pays the same start-up as neuronize."""
    import libcst  # noqa: F401 - the import is part of the floor, as it is of neuronize
    from concurrent.futures import ProcessPoolExecutor

    paths = Path(list_file).read_text().splitlines()
    sizes = {p: os.path.getsize(p) for p in paths}
    paths.sort(key=lambda p: -sizes[p])
    if workers > 1 and len(paths) > 1 and sum(sizes.values()) >= threshold:
        chunk = max(1, min(32, len(paths) // (workers * 8)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_parse_one, paths, chunksize=chunk))
    else:
        for p in paths:
            _parse_one(p)


# -- cost against file size: one generated module at several sizes -------------------------
def generated_module(size: int) -> bytes:
    """A generated-looking module of about ``size`` bytes: plain lines, a CUDA device string
    every hundred lines (the shape of the hostile-input test's large file)."""
    plain = b"weights_%d = [0.1, 0.2, 0.3, 0.4]  # " + b"y" * 50 + b"\n"
    cuda = b"x = torch.zeros(4, device='cuda')\n"
    block = b"".join(plain % i for i in range(99)) + cuda
    return b"import torch\n" + block * max(1, size // len(block))


def size_main(size: int) -> None:
    """One sample of the size series, in a fresh interpreter: seconds of ``libcst.parse_module``
    and of the whole per-file pipeline (``run_source`` with fixes applied) on the same bytes."""
    import libcst

    from neuronize.analysis.context import Options
    from neuronize.analysis.engine import run_source
    from neuronize.registry import all_rules

    source = generated_module(size)
    rules = all_rules()
    run_source(b"import torch\nx.cuda()\n", rules)  # warm-up: rule tables, the parse thread
    started = time.perf_counter()
    libcst.parse_module(source)
    parse = time.perf_counter() - started
    started = time.perf_counter()
    result = run_source(source, rules, Options(unsafe_fixes=True))
    total = time.perf_counter() - started
    assert result.error is None and result.output is not None, result.error
    print(json.dumps({"parse": parse, "run": total}))


def size_series(sizes_mb: list[float], runs: int) -> list[tuple[float, float, float]]:
    """``(MB, median parse s, median run s)`` per size; the runs of all sizes are interleaved."""
    samples: dict[float, list[dict[str, float]]] = {mb: [] for mb in sizes_mb}
    for i in range(runs):
        print(f"size series, run {i + 1}/{runs}...", file=sys.stderr)
        for mb in sizes_mb:
            out = subprocess.run([sys.executable, __file__, "--_size", str(int(mb * 1_000_000))],
                                 capture_output=True, text=True, check=True)
            samples[mb].append(json.loads(out.stdout))
    return [(mb, statistics.median(s["parse"] for s in samples[mb]),
             statistics.median(s["run"] for s in samples[mb])) for mb in sizes_mb]


def print_size_series(series: list[tuple[float, float, float]]) -> bool:
    """The table and the verdict: every size at most 3x its parse, the ratio flat in size."""
    print()
    print(f"{'one file of':14} {'parse s':>9} {'neuronize s':>12} {'ratio':>7}")
    for mb, parse, total in series:
        print(f"{mb:10.2f} MB {parse:9.2f} {total:12.2f} {total / parse:6.2f}x")
    ratios = [total / parse for _, parse, total in series]
    worst = max(ratios)
    growth = ratios[-1] / ratios[0]
    ok = worst <= 3.0 and growth <= 1.25
    print(f"{'per-file cost / its parse (worst size)':42} {worst:7.3f}x {'<= 3.0':>10}  "
          f"{'met' if worst <= 3.0 else 'NOT met'}")
    print(f"{'ratio at the largest / the smallest size':42} {growth:7.3f}x {'<= 1.25':>10}  "
          f"{'met' if growth <= 1.25 else 'NOT met'} (linear cost)")
    return ok


# -- the benchmark -------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    samples: list[Sample] = field(default_factory=list)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples) if self.samples else float("nan")

    @property
    def rss(self) -> tuple[float, float]:
        if not self.samples:
            return float("nan"), float("nan")
        return max(s.max_rss_mb for s in self.samples), max(s.tree_rss_mb for s in self.samples)


def _python_files(corpora: list[Path]) -> list[Path]:
    from neuronize.sources.discover import discover

    files, _ = discover([str(c) for c in corpora])
    return [f.path for f in files if f.path.suffix == ".py"]


def _torchfix_command(explicit: str | None) -> list[str] | None:
    if explicit:
        return explicit.split()
    found = shutil.which("torchfix")
    if found:
        return [found]
    beside = Path(sys.executable).with_name("torchfix")
    return [str(beside)] if beside.exists() else None


def _neuronize_has(flag: str) -> bool:
    out = subprocess.run([sys.executable, "-m", "neuronize", "check", "--help"],
                         capture_output=True, text=True)
    return flag in out.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="neuronize performance benchmark")
    parser.add_argument("--corpus", action="append", type=Path, default=[],
                        help="a directory (or file) to benchmark on; repeatable")
    parser.add_argument("--generate", type=int, metavar="N", default=None,
                        help="generate N files (default 1000 when no --corpus is given)")
    parser.add_argument("--mb", type=float, default=None, help="size of the generated corpus, MB")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=5, help="runs per measure (medians)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="workers for neuronize, the floor and TorchFix (default: all cores)")
    parser.add_argument("--torchfix", metavar="CMD", default=None,
                        help="how to run torchfix (default: `torchfix` on PATH or beside python)")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument("--torchfix-runs", type=int, default=None,
                        help="runs of torchfix (default: --runs; it is slow)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="generate into this directory and keep it")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--sizes", default="0.25,0.5,1,2", metavar="MB,MB,...",
                        help="sizes of the one-file series (cost against file size); '' for none")
    parser.add_argument("--size-runs", type=int, default=3, help="runs of the size series")
    parser.add_argument("--sizes-only", action="store_true", help="run the size series only")
    parser.add_argument("--startup-only", action="store_true",
                        help="measure start-up only: one small file against `import libcst`")
    args = parser.parse_args(argv)
    sizes = [float(x) for x in args.sizes.split(",") if x.strip()]
    if args.sizes_only:
        return 0 if print_size_series(size_series(sizes, args.size_runs)) else 1
    if args.startup_only:
        return startup(args.runs)

    from neuronize.api import PARALLEL_THRESHOLD
    from neuronize.analysis.prefilter import prefilter_for
    from neuronize.registry import all_rules

    work = Path(tempfile.mkdtemp(prefix="neuronize-bench-"))
    try:
        corpora = list(args.corpus)
        if args.generate or not corpora:
            from corpus_gen import generate_corpus

            target = args.keep or work / "generated"
            n = args.generate or 1000
            t0 = time.perf_counter()
            generate_corpus(target, n, seed=args.seed,
                            target_bytes=int(args.mb * 1_000_000) if args.mb else None)
            print(f"generated {n} files in {time.perf_counter() - t0:.1f}s into {target}",
                  file=sys.stderr)
            corpora.append(target)
        code = _bench(args, corpora, work, prefilter_for(all_rules()), PARALLEL_THRESHOLD)
        if sizes:
            print_size_series(size_series(sizes, args.size_runs))
        return code
    finally:
        shutil.rmtree(work, ignore_errors=True)


SMALL_FILE = ('import torch\n\nmodel = torch.nn.Linear(4, 4).cuda()\n'
              'x = torch.randn(2, 4, device="cuda")\nprint(model(x))\n')


def startup(runs: int) -> int:
    """The start-up rows alone, interleaved: `check one_small_file.py` (no cache) against
    `python -c "import libcst"`, with `--version`, `rules`, `explain` and bare Python."""
    work = Path(tempfile.mkdtemp(prefix="neuronize-startup-"))
    try:
        small = work / "train_small.py"
        small.write_text(SMALL_FILE)
        py, nz = sys.executable, [sys.executable, "-m", "neuronize"]
        commands = {
            'python -c "import libcst"': [py, "-c", "import libcst"],
            "neuronize check one_small_file.py": nz + ["check", "-q", "--no-cache", str(small)],
            "neuronize --version": nz + ["--version"],
            "neuronize explain NRN102": nz + ["explain", "NRN102"],
            "neuronize rules": nz + ["rules"],
            "python -c pass": [py, "-c", "pass"],
        }
        for cmd in commands.values():  # warm-up: page cache, bytecode
            run(cmd)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, cmd in commands.items():
                times[name].append(run(cmd).seconds)
        medians = {name: statistics.median(t) for name, t in times.items()}
        for name, value in medians.items():
            print(f"{name:40} {value:8.3f} s")
        ratio = medians["neuronize check one_small_file.py"] / medians['python -c "import libcst"']
        verdict = "met" if ratio <= 1.5 else "NOT met"
        print(f"{'single-file check / import libcst':40} {ratio:7.3f}x    <= 1.5  {verdict}")
        return 0 if ratio <= 1.5 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _bench(args: argparse.Namespace, corpora: list[Path], work: Path, prefilter, threshold: int) -> int:  # type: ignore[no-untyped-def]
    files = _python_files(corpora)
    sizes = {p: p.stat().st_size for p in files}
    selected = [p for p in files if prefilter.search(p.read_bytes())]
    total_mb = sum(sizes.values()) / 1e6
    sel_mb = sum(sizes[p] for p in selected) / 1e6
    print(f"corpus: {', '.join(map(str, corpora))}")
    print(f"  {len(files)} .py files, {total_mb:.1f} MB; pre-filter keeps {len(selected)} files "
          f"({100 * len(selected) / max(1, len(files)):.0f}%), {sel_mb:.1f} MB "
          f"({100 * sel_mb / max(total_mb, 1e-9):.0f}% of bytes); workers: {args.jobs}")
    sel_list = work / "selected.txt"
    sel_list.write_text("\n".join(str(p) for p in selected))
    all_list = [str(p) for p in files]
    small = work / "small" / "train_small.py"
    small.parent.mkdir()
    small.write_text(SMALL_FILE)

    py = sys.executable
    nz = [py, "-m", "neuronize"]
    paths = [str(c) for c in corpora]
    jobs = ["--jobs", str(args.jobs)]
    has_no_cache = _neuronize_has("--no-cache")
    cache_env = {"NEURONIZE_CACHE_DIR": str(work / "cache"), "XDG_CACHE_HOME": str(work / "xdg")}
    cold_flags = ["--no-cache"] if has_no_cache else []
    tf = None if args.no_torchfix else _torchfix_command(args.torchfix)

    rows = {
        "floor": Row("floor: libcst parse of pre-filtered files"),
        "cold": Row("neuronize check, cold (--no-cache)"),
        "diff": Row("neuronize fix --diff, cold (--no-cache)"),
        "fill": Row("neuronize check, cold, filling the cache"),
        "warm": Row("neuronize check, warm (unchanged tree)"),
        "torchfix": Row("torchfix, same files"),
        "import": Row('python -c "import libcst"'),
        "single": Row("neuronize check one_small_file.py"),
        "version": Row("neuronize --version"),
        "help": Row("neuronize --help"),
        "python": Row('python -c "pass"'),
    }
    if not has_no_cache:
        rows["cold"].note = "--no-cache not wired yet: plain `check`"
        rows["warm"].note = "cache not wired yet: same as cold"
    if tf is None:
        rows["torchfix"].note = "not installed"

    def record(key: str, sample: Sample, ok: tuple[int, ...] = (0, 1, 2)) -> None:
        if sample.returncode not in ok:
            print(f"warning: {rows[key].name}: exit {sample.returncode}\n{sample.stderr[-2000:]}",
                  file=sys.stderr)
        rows[key].samples.append(sample)

    # warm-up: page cache, pyc files
    run(nz + ["--version"])
    run(nz + ["check", "-q", *jobs, *cold_flags, str(small)], env=cache_env)

    for i in range(args.runs):
        print(f"run {i + 1}/{args.runs}...", file=sys.stderr)
        record("floor", run([py, __file__, "--_floor", str(sel_list), str(args.jobs), str(threshold)]), (0,))
        record("cold", run(nz + ["check", "-q", *jobs, *cold_flags, *paths], env=cache_env))
        record("diff", run(nz + ["fix", "--diff", "-q", *jobs, *cold_flags, *paths], env=cache_env))
        if has_no_cache:
            shutil.rmtree(work / "cache", ignore_errors=True)
            record("fill", run(nz + ["check", "-q", *jobs, *paths], env=cache_env))
            record("warm", run(nz + ["check", "-q", *jobs, *paths], env=cache_env))
        if tf is not None and i < (args.torchfix_runs if args.torchfix_runs is not None else args.runs):
            record("torchfix", run(tf + ["-j", str(args.jobs), *all_list]))
        record("import", run([py, "-c", "import libcst"]), (0,))
        record("single", run(nz + ["check", "-q", *cold_flags, str(small)], env=cache_env))
        record("version", run(nz + ["--version"]), (0,))
        record("help", run(nz + ["--help"]), (0,))
        record("python", run([py, "-c", "pass"]), (0,))
    if not has_no_cache:
        rows["warm"].samples = list(rows["cold"].samples)

    print()
    print(f"{'measure':48} {'median s':>9} {'min s':>8} {'max s':>8} {'peak RSS MB':>12} {'tree RSS MB':>12}")
    for row in rows.values():
        if not row.samples:
            print(f"{row.name:48} {'-':>9}   {row.note}")
            continue
        lo = min(s.seconds for s in row.samples)
        hi = max(s.seconds for s in row.samples)
        single, tree = row.rss
        note = f"   {row.note}" if row.note else ""
        print(f"{row.name:48} {row.median:9.3f} {lo:8.3f} {hi:8.3f} {single:12.0f} {tree:12.0f}{note}")

    def ratio(a: str, b: str) -> float | None:
        if not rows[a].samples or not rows[b].samples:
            return None
        return rows[a].median / rows[b].median

    cold_rss = rows["cold"].rss[1]
    checks = [
        ("whole-corpus check / floor", ratio("cold", "floor"), "<=", 1.25),
        ("whole-corpus fix --diff / floor", ratio("diff", "floor"), "<=", 1.25),
        ("torchfix / neuronize check", ratio("torchfix", "cold"), ">=", 3.0),
        ("warm re-run / cold run", ratio("warm", "cold"), "<", 0.05),
        ("single-file check / import libcst", ratio("single", "import"), "<=", 1.5),
        ("peak RSS of the check (whole tree), MB", cold_rss, "<", 300.0),
    ]
    print()
    print(f"{'ratio':42} {'value':>8} {'target':>10}  verdict")
    failed = 0
    for name, value, op, target in checks:
        if value is None:
            print(f"{name:42} {'n/a':>8} {op + ' ' + str(target):>10}  not measured")
            continue
        ok = {"<=": value <= target, ">=": value >= target, "<": value < target}[op]
        failed += not ok
        scale = "" if "RSS" in name else "x"
        note = ""
        if "RSS" in name and total_mb < 60:
            note = f" (corpus is {total_mb:.0f} MB, the target is for 80 MB)"
        print(f"{name:42} {value:7.3f}{scale} {op + ' ' + str(target):>10}  "
              f"{'met' if ok else 'NOT met'}{note}")
    extra = ratio("version", "python"), ratio("help", "python")
    if None not in extra:
        print(f"(start-up: --version {rows['version'].median:.3f}s, --help {rows['help'].median:.3f}s, "
              f"bare python {rows['python'].median:.3f}s)")

    if args.json:
        data = {
            "corpus": {"paths": [str(c) for c in corpora], "files": len(files), "mb": total_mb,
                       "selected_files": len(selected), "selected_mb": sel_mb},
            "rows": {k: {"name": r.name, "median_s": r.median if r.samples else None,
                         "runs": [s.seconds for s in r.samples], "max_rss_mb": r.rss[0],
                         "tree_rss_mb": r.rss[1], "note": r.note} for k, r in rows.items()},
            "ratios": {name: value for name, value, _, _ in checks},
        }
        args.json.write_text(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--_floor":
        floor_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    if len(sys.argv) == 3 and sys.argv[1] == "--_size":
        size_main(int(sys.argv[2]))
        sys.exit(0)
    sys.exit(main())
