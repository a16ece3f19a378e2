#!/usr/bin/env python3
"""The xcallback benchmark suite driver: run it through Benchmarks/Suite/run.

Builds what it needs (release), generates seeded request streams, runs the
throughput, latency, start-up, memory and route-table measurements, prints a
table and writes Benchmarks/results/latest.json. See README.md beside this file.

The machine is assumed shared and noisy: contenders run alternately within a
round and each keeps its best round, and every figure is reported beside a
peer measured in the same run (a ratio), so a burst of load hits both alike.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import time

import gen

SUITE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(SUITE, "..", ".."))
WORK = os.path.join(ROOT, "Benchmarks", ".build", "suite")  # gitignored (/Benchmarks/.build/)
RESULTS = os.path.join(ROOT, "Benchmarks", "results")        # gitignored (/Benchmarks/results/)

XCALLBACK = os.path.join(ROOT, ".build", "release", "xcallback")
FOUNDATION_PEER = os.path.join(SUITE, "FoundationPeer", ".build", "release", "FoundationPeer")
ROUTE_BENCH = os.path.join(SUITE, "RouteBench", ".build", "release", "RouteBench")
PYTHON_PEER = os.path.join(SUITE, "python_peer.py")
PACER = os.path.join(WORK, "bin", "pacer")
RUNSTAT = os.path.join(WORK, "bin", "runstat")
# The Calculator's job in plain C, with only the unavoidable work (c_reference.c).
C_REFERENCE = os.path.join(WORK, "bin", "c_reference")
# Counts heap allocations when preloaded (malloc_count.c).
MALLOC_COUNT = os.path.join(WORK, "bin", "libmalloc_count.so")
BENCH_PLUGINS = os.path.join(WORK, "plugins", "bench")
SAMPLE_PLUGINS = os.path.join(WORK, "plugins", "samples")
GENERATED_PLUGINS = os.path.join(WORK, "plugins", "gen100")
LOGS = os.path.join(WORK, "logs")

SEED = 0x5EED
MIX = "calc=60,pokedex=30,unknown=10"


def log(message):
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def run_checked(command, cwd=ROOT, **kwargs):
    log("$ " + " ".join(command))
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, check=True, **kwargs)
    return time.perf_counter() - started


def swift_build(command, attempts=3):
    """`swift build`, tried again when it fails: in a shared checkout a source file
    edited mid-build ("was modified during the build") fails one build, not the next."""
    for attempt in range(1, attempts + 1):
        try:
            return run_checked(command)
        except subprocess.CalledProcessError:
            if attempt == attempts:
                raise SystemExit("build failed %d times: %s\n(use --no-build to measure what .build already holds)"
                                 % (attempts, " ".join(command)))
            log("build failed; trying again in 5 s")
            time.sleep(5)


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------

def build(skip_swift, products=None):
    """Builds the host, the sample plug-ins, the peers and the helpers; with
    `products` (a folder holding a built xcallback and the sample plug-ins,
    `--check`), only the C pieces, and the peers are not needed."""
    times = {}
    os.makedirs(os.path.join(WORK, "bin"), exist_ok=True)
    if not skip_swift and not products:
        times["host"] = swift_build(["swift", "build", "-c", "release"])
        times["FoundationPeer"] = swift_build(
            ["swift", "build", "-c", "release", "--package-path", os.path.join(SUITE, "FoundationPeer")])
        times["RouteBench"] = swift_build(
            ["swift", "build", "-c", "release", "--package-path", os.path.join(SUITE, "RouteBench")])
    for path in (XCALLBACK,) if products else (XCALLBACK, FOUNDATION_PEER, ROUTE_BENCH):
        if not os.path.exists(path):
            raise SystemExit("missing %s: run without --no-build" % path)
    include = os.path.join(ROOT, "bindings", "swift", "Sources", "CXCallback", "include")
    cflags = ["cc", "-std=c11", "-O2", "-Wall", "-shared", "-fPIC", "-I" + include]
    run_checked(["cc", "-O2", "-Wall", "-o", PACER, os.path.join(SUITE, "pacer.c")])
    run_checked(["cc", "-O2", "-Wall", "-o", RUNSTAT, os.path.join(SUITE, "runstat.c")])
    # The C reference takes the digits of the rare results its integer method
    # leaves open from the Swift runtime (c_reference.c says why).
    runtime = swift_runtime_directory()
    run_checked(["cc", "-std=c17", "-O2", "-Wall", "-o", C_REFERENCE, os.path.join(SUITE, "c_reference.c"),
                 "-L" + runtime, "-lswiftCore", "-Wl,-rpath," + runtime, "-lm"])
    run_checked(["cc", "-O2", "-Wall", "-shared", "-fPIC", "-o", MALLOC_COUNT, os.path.join(SUITE, "malloc_count.c")])

    # The trivial C plug-in alone.
    fresh_directory(BENCH_PLUGINS)
    run_checked(cflags + [os.path.join(SUITE, "noop.c"), "-o", os.path.join(BENCH_PLUGINS, "libbench.so")])

    # The sample plug-ins, as `swift build` made them, plus the Math manifest.
    fresh_directory(SAMPLE_PLUGINS)
    release = products or os.path.join(ROOT, ".build", "release")
    for name in ("libAlert.so", "libCalculator.so", "libFaulty.so", "libPokedex.so"):
        install(os.path.join(release, name), SAMPLE_PLUGINS)
    install(os.path.join(ROOT, "Plugins", "Math", "math.xcallback.toml"), SAMPLE_PLUGINS)

    # 100 distinct copies of the C plug-in: build one with a fixed-width
    # placeholder name (which is also its scheme) and patch the bytes.
    fresh_directory(GENERATED_PLUGINS)
    template = os.path.join(WORK, "bin", "genplug-template.so")
    run_checked(cflags + ['-DNAME="genplug000"', os.path.join(SUITE, "noop.c"), "-o", template])
    with open(template, "rb") as source:
        image = source.read()
    if image.count(b"genplug000") < 1:
        raise SystemExit("placeholder name not found in %s" % template)
    for index in range(100):
        name = "genplug%03d" % index
        target = os.path.join(GENERATED_PLUGINS, "lib%s.so" % name)
        with open(target, "wb") as out:
            out.write(image.replace(b"genplug000", name.encode()))
        os.chmod(target, 0o755)
    return times


def swift_runtime_directory():
    """Where libswiftCore.so of the `swift` on PATH is: <toolchain>/usr/lib/swift/linux."""
    swift = shutil.which("swift")
    if not swift:
        raise SystemExit("swift is not on PATH")
    directory = os.path.join(os.path.dirname(os.path.realpath(swift)), "..", "lib", "swift", "linux")
    if not os.path.exists(os.path.join(directory, "libswiftCore.so")):
        raise SystemExit("libswiftCore.so not found in %s" % os.path.normpath(directory))
    return os.path.normpath(directory)


def fresh_directory(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    os.chmod(path, 0o755)  # the host refuses group/other-writable plug-in directories


def install(source, directory):
    target = os.path.join(directory, os.path.basename(source))
    shutil.copyfile(source, target)
    os.chmod(target, 0o755 if source.endswith(".so") else 0o644)


def check_plugins():
    """Every plug-in directory loads as expected (`xcallback plugins`)."""
    found = {}
    for label, directory, expected in (("bench", BENCH_PLUGINS, 1), ("samples", SAMPLE_PLUGINS, 5),
                                       ("gen100", GENERATED_PLUGINS, 100)):
        listing = subprocess.run([XCALLBACK, "plugins", "--plugins", directory],
                                 capture_output=True, text=True, check=True).stdout
        loaded = sum(1 for line in listing.splitlines() if line.startswith("loaded"))
        found[label] = loaded
        if loaded != expected:
            raise SystemExit("plug-in directory %s: %d loaded, expected %d:\n%s" % (directory, loaded, expected, listing))
    return found


# --------------------------------------------------------------------------
# Streams
# --------------------------------------------------------------------------

def stream(spec, count, label=None):
    """Path of a cached generated stream (regenerated when the generator changes)."""
    directory = os.path.join(WORK, "streams")
    os.makedirs(directory, exist_ok=True)
    name = "%s-%d-%x-v%d%s.txt" % (spec.replace("=", "").replace(",", "_"), count, SEED, gen.VERSION,
                                   "-labelled" if label else "")
    path = os.path.join(directory, name)
    if not os.path.exists(path):
        log("generating %s (%d lines)" % (name, count))
        temporary = path + ".tmp"
        gen.write(temporary, spec, count, SEED, label)
        os.replace(temporary, path)
    return path


def prefix_stream(path, count):
    """The first `count` lines of a stream, as its own file."""
    target = path.replace(".txt", "-head%d.txt" % count)
    if not os.path.exists(target):
        with open(path, "rb") as source, open(target + ".tmp", "wb") as out:
            for index, line in enumerate(source):
                if index == count:
                    break
                out.write(line)
        os.replace(target + ".tmp", target)
    return target


def line_stats(path):
    lines = 0
    size = 0
    with open(path, "rb") as source:
        for line in source:
            lines += 1
            size += len(line) - 1
    return lines, size / max(lines, 1)


# --------------------------------------------------------------------------
# Running a contender
# --------------------------------------------------------------------------

def host(isolation, *directories, extra=()):
    command = [XCALLBACK, "run", "--isolation", isolation]
    for directory in directories:
        command += ["--plugins", directory]
    return command + list(extra)


def timed_run(command, input_path, output=os.devnull, log_name="run"):
    """Runs `command` under `runstat` with stdin from `input_path`: wall seconds, CPU seconds
    (user + system, with reaped children) and peak RSS of the command."""
    os.makedirs(LOGS, exist_ok=True)
    report = os.path.join(WORK, "runstat.out")
    with open(input_path, "rb") as stdin, open(output, "wb") as stdout, \
            open(os.path.join(LOGS, log_name + ".stderr"), "wb") as stderr:
        subprocess.run([RUNSTAT, report] + command, stdin=stdin, stdout=stdout, stderr=stderr, cwd=ROOT, check=True)
    with open(report) as source:
        wall_ns, user_us, system_us, maxrss_kib, status = (int(field) for field in source.read().split())
    if status != 0:
        raise SystemExit("%s exited with %s (stderr in %s)" % (" ".join(command), status,
                                                                os.path.join(LOGS, log_name + ".stderr")))
    return {"wall_s": wall_ns / 1e9, "cpu_s": (user_us + system_us) / 1e6, "maxrss_kib": maxrss_kib}


def slug(text):
    return "".join(c if c.isalnum() else "-" for c in text).strip("-")


# --------------------------------------------------------------------------
# 0. Same job: every contender gives the same records
# --------------------------------------------------------------------------

def check_outputs(calc_path):
    """Runs each calc contender on the first 2,000 lines and compares the records
    with xcallback's (sorted, since records come out as requests complete)."""
    sample = prefix_stream(calc_path, 2000)
    contenders = {
        "xcallback none": host("none", SAMPLE_PLUGINS),
        "xcallback process": host("process", SAMPLE_PLUGINS),
        "Foundation peer": [FOUNDATION_PEER],
        "Python peer": [sys.executable, PYTHON_PEER],
        "C reference": [C_REFERENCE],
    }
    outputs = {}
    for label, command in contenders.items():
        with open(sample, "rb") as stdin:
            outputs[label] = subprocess.run(command, stdin=stdin, capture_output=True, check=True, cwd=ROOT).stdout
    reference = sorted(outputs["xcallback none"].splitlines())
    result = {}
    for label, output in outputs.items():
        lines = sorted(output.splitlines())
        result[label] = {"records": len(lines), "same_as_xcallback": lines == reference}
        if len(lines) != 2000 or lines != reference:
            log("WARNING: %s does not give xcallback's records on the calc sample" % label)
    errors = sum(1 for line in reference if line.startswith(b"error"))
    result["xcallback none"]["error_records"] = errors
    return result


def check_c_reference(streams, hard_path):
    """The C reference is the floor xcallback's throughput is a share of, so
    it must do exactly xcallback's job: its records must be xcallback's, byte
    for byte, on the whole calc stream the throughput section measures and on
    a stream of hard numbers. In order against `--keep-order` (which writes
    records through the Outcome path), and as a set against the default run
    the throughput section times (in-place records, in completion order).
    Stops the run when they differ."""
    directory = os.path.join(WORK, "check")
    os.makedirs(directory, exist_ok=True)
    self_check = subprocess.run([C_REFERENCE, "--self-check", "200000"], capture_output=True, text=True, cwd=ROOT)
    summary = self_check.stderr.strip().splitlines()
    if self_check.returncode != 0:
        raise SystemExit("C reference: its number code disagrees with the Swift runtime:\n%s"
                         % "\n".join(summary[-20:]))
    result = {"self_check": summary[-1] if summary else ""}
    for kind, path in (("calc", streams["calc"]), ("calchard", hard_path)):
        outputs = {}
        for label, command in (("xcallback", host("none", SAMPLE_PLUGINS, extra=["--keep-order"])),
                               ("xcallback-completion-order", host("none", SAMPLE_PLUGINS)),
                               ("c_reference", [C_REFERENCE])):
            outputs[label] = os.path.join(directory, "%s-%s.out" % (kind, label))
            with open(path, "rb") as stdin, open(outputs[label], "wb") as stdout:
                finished = subprocess.run(command, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, cwd=ROOT)
            if finished.returncode != 0:
                raise SystemExit("%s failed on %s: %s" % (label, path, finished.stderr.decode(errors="replace")))
        lines, difference = first_difference(outputs["xcallback"], outputs["c_reference"])
        if difference is not None:
            number, ours, theirs = difference
            raise SystemExit("C reference: record %d of %s differs from xcallback's (outputs in %s):\n"
                             "  xcallback:   %r\n  C reference: %r"
                             % (number, os.path.relpath(path, ROOT), os.path.relpath(directory, ROOT), ours, theirs))
        if line_multiset_digest(outputs["xcallback-completion-order"]) != line_multiset_digest(outputs["c_reference"]):
            with open(outputs["xcallback-completion-order"], "rb") as a, open(outputs["c_reference"], "rb") as b:
                theirs, ours = sorted(a.read().splitlines()), sorted(b.read().splitlines())
            example = next(((x, y) for x, y in zip(theirs, ours) if x != y), (len(theirs), len(ours)))
            raise SystemExit("C reference: xcallback's records in completion order on %s are not the C "
                             "reference's (outputs in %s); first difference in sorted order:\n"
                             "  xcallback:   %r\n  C reference: %r"
                             % (os.path.relpath(path, ROOT), os.path.relpath(directory, ROOT), example[0],
                                example[1]))
        result[kind] = {"stream": os.path.relpath(path, ROOT), "records": lines, "byte_identical": True}
        log("  C reference: %s records on %s byte-identical to xcallback's" % (format(lines, ","), kind))
    return result


def line_multiset_digest(path):
    """The lines of a file as a multiset, in constant memory: their count and
    the sum of a 64-bit hash of each (order does not matter)."""
    count, total = 0, 0
    with open(path, "rb") as source:
        for line in source:
            count += 1
            total = (total + int.from_bytes(hashlib.blake2b(line, digest_size=8).digest(), "little")) % (1 << 64)
    return count, total


def first_difference(path_a, path_b):
    """(line count, None) when the files hold the same bytes, else
    (line count so far, (line number, line of a, line of b))."""
    count = 0
    with open(path_a, "rb") as a, open(path_b, "rb") as b:
        while True:
            line_a, line_b = a.readline(), b.readline()
            if line_a != line_b:
                return count, (count + 1, line_a, line_b)
            if not line_a:
                return count, None
            count += 1


# --------------------------------------------------------------------------
# 1. Throughput
# --------------------------------------------------------------------------

def throughput(config, streams):
    count = config.count
    contenders = [
        ("cat (I/O floor)", "calc", ["cat"]),
        ("xcallback none · noop (C)", "noop", host("none", BENCH_PLUGINS)),
        ("xcallback process · noop (C)", "noop", host("process", BENCH_PLUGINS)),
        ("xcallback none · calculator", "calc", host("none", SAMPLE_PLUGINS)),
        ("xcallback process · calculator", "calc", host("process", SAMPLE_PLUGINS)),
        # The workers' sandbox costs nothing per request by design (its filter
        # allows every call the request path makes): measured, not assumed.
        ("xcallback process · noop (C) · sandbox off", "noop", host("process", BENCH_PLUGINS, extra=["--sandbox", "off"])),
        ("xcallback process · calculator · sandbox off", "calc", host("process", SAMPLE_PLUGINS, extra=["--sandbox", "off"])),
        ("xcallback none · mixed", "mixed", host("none", SAMPLE_PLUGINS)),
        ("xcallback process · mixed", "mixed", host("process", SAMPLE_PLUGINS)),
        ("C reference · calc", "calc", [C_REFERENCE]),
        ("Foundation peer · calc", "calc", [FOUNDATION_PEER]),
        ("Python peer · calc", "calc", [sys.executable, PYTHON_PEER]),
    ]
    rounds = {label: [] for label, _, _ in contenders}
    for round_index in range(config.rounds):
        for label, kind, command in contenders:
            if label.startswith("Python") and round_index >= config.python_rounds:
                continue
            result = timed_run(command, streams[kind], log_name="throughput-" + slug(label))
            rounds[label].append(result)
            log("  round %d  %-46s %7.3f s  %10.0f URLs/s" % (round_index + 1, label, result["wall_s"],
                                                              count / result["wall_s"]))
    rows = {}
    for label, kind, command in contenders:
        best = min(rounds[label], key=lambda r: r["wall_s"])
        rows[label] = {
            "stream": kind,
            "command": " ".join(os.path.relpath(part, ROOT) if part.startswith(ROOT) else part for part in command),
            "urls": count,
            "best_wall_s": best["wall_s"],
            "urls_per_s": count / best["wall_s"],
            "ns_per_url": best["wall_s"] * 1e9 / count,
            "cpu_ns_per_url": best["cpu_s"] * 1e9 / count,
            "maxrss_kib": max(r["maxrss_kib"] for r in rounds[label]),
            "rounds": [r["wall_s"] for r in rounds[label]],
        }
    rate = {label: row["urls_per_s"] for label, row in rows.items()}
    ratios = {
        "none_calc_vs_foundation": rate["xcallback none · calculator"] / rate["Foundation peer · calc"],
        "none_calc_vs_python": rate["xcallback none · calculator"] / rate["Python peer · calc"],
        "process_vs_none_calc": rate["xcallback process · calculator"] / rate["xcallback none · calculator"],
        "process_vs_none_noop": rate["xcallback process · noop (C)"] / rate["xcallback none · noop (C)"],
        "process_vs_none_mixed": rate["xcallback process · mixed"] / rate["xcallback none · mixed"],
        "sandbox_on_vs_off_calc": rate["xcallback process · calculator"] / rate["xcallback process · calculator · sandbox off"],
        "sandbox_on_vs_off_noop": rate["xcallback process · noop (C)"] / rate["xcallback process · noop (C) · sandbox off"],
        "none_calc_vs_cat": rate["xcallback none · calculator"] / rate["cat (I/O floor)"],
        "none_calc_vs_c_reference": rate["xcallback none · calculator"] / rate["C reference · calc"],
        "process_calc_vs_c_reference": rate["xcallback process · calculator"] / rate["C reference · calc"],
        "none_noop_vs_none_calc": rate["xcallback none · noop (C)"] / rate["xcallback none · calculator"],
    }
    return {"rows": rows, "ratios": ratios}


# --------------------------------------------------------------------------
# 2. Latency through a FIFO
# --------------------------------------------------------------------------

def latency(config, templates):
    fifo = os.path.join(WORK, "latency.fifo")
    contenders = [
        ("cat (FIFO floor)", None),
        ("xcallback none", "none"),
        ("xcallback process", "process"),
    ]
    warmup = int(config.rate * 0.2)
    rounds = {label: [] for label, _ in contenders}
    for round_index in range(config.latency_rounds):
        for label, isolation in contenders:
            if os.path.exists(fifo):
                os.unlink(fifo)
            os.mkfifo(fifo, 0o600)
            if isolation is None:
                command = ["cat", fifo]
            else:
                command = host(isolation, SAMPLE_PLUGINS, extra=["--fifo", fifo])
            with open(os.path.join(LOGS, "latency-%s.stderr" % slug(label)), "wb") as stderr:
                server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, cwd=ROOT)
                pacer = subprocess.run([PACER, fifo, templates, str(config.rate), str(config.latency_seconds),
                                        str(warmup)], stdin=server.stdout, capture_output=True, text=True)
                server.stdout.close()
                if server.poll() is None:
                    server.send_signal(signal.SIGTERM)
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
            if pacer.returncode != 0:
                raise SystemExit("pacer failed for %s: %s" % (label, pacer.stderr))
            samples = []
            missing = 0
            for line in pacer.stdout.splitlines():
                _, value = line.split()
                if value == "-1":
                    missing += 1
                else:
                    samples.append(int(value))
            summary = percentiles(samples)
            summary["missing"] = missing
            summary["pacer"] = pacer.stderr.strip()
            rounds[label].append(summary)
            log("  round %d  %-20s p50 %7.3f ms  p99 %7.3f ms  p99.9 %7.3f ms  missing %d"
                % (round_index + 1, label, summary["p50_ms"], summary["p99_ms"], summary["p999_ms"], missing))
    if os.path.exists(fifo):
        os.unlink(fifo)
    rows = {}
    for label, _ in contenders:
        best = min(rounds[label], key=lambda r: (r["missing"], r["p99_ms"]))
        rows[label] = dict(best, rounds=rounds[label])
    floor = rows["cat (FIFO floor)"]
    ratios = {
        "none_p99_vs_floor": rows["xcallback none"]["p99_ms"] / floor["p99_ms"],
        "process_p99_vs_floor": rows["xcallback process"]["p99_ms"] / floor["p99_ms"],
        "process_p99_vs_none": rows["xcallback process"]["p99_ms"] / rows["xcallback none"]["p99_ms"],
    }
    return {"rate_per_s": config.rate, "seconds": config.latency_seconds, "warmup_requests": warmup,
            "rows": rows, "ratios": ratios}


def percentiles(samples):
    if not samples:
        return {"count": 0, "p50_ms": float("nan"), "p99_ms": float("nan"), "p999_ms": float("nan"),
                "max_ms": float("nan")}
    ordered = sorted(samples)

    def at(fraction):
        # Nearest rank: the smallest value with at least `fraction` of the samples at or below it.
        index = max(0, min(len(ordered) - 1, int(-(-fraction * len(ordered) // 1)) - 1))
        return ordered[index] / 1e6

    return {"count": len(ordered), "p50_ms": at(0.50), "p99_ms": at(0.99), "p999_ms": at(0.999),
            "max_ms": ordered[-1] / 1e6, "mean_ms": statistics.fmean(ordered) / 1e6}


# --------------------------------------------------------------------------
# 3. Start-up
# --------------------------------------------------------------------------

def startup(config):
    calc_line = b"calc://x-callback-url/add?lhs=2&rhs=4.2&x-success=app%3A%2F%2Fok\n"
    generated_line = b"genplug099://x-callback-url/noop?x=1&x-success=app%3A%2F%2Fok\n"
    contenders = [
        ("cat (exec floor)", ["cat"], calc_line),
        ("xcallback none · samples", host("none", SAMPLE_PLUGINS), calc_line),
        ("xcallback process · samples", host("process", SAMPLE_PLUGINS), calc_line),
        ("xcallback none · 100 plug-ins", host("none", GENERATED_PLUGINS), generated_line),
        ("xcallback process · 100 plug-ins", host("process", GENERATED_PLUGINS), generated_line),
        ("xcallback process · 100 plug-ins · sandbox off", host("process", GENERATED_PLUGINS, extra=["--sandbox", "off"]),
         generated_line),
        # Each worker executed instead of forked from the zygote (through
        # env(1), about a millisecond once): what the zygote saves.
        ("xcallback process · 100 plug-ins · exec", ["env", "XCALLBACK_WORKER_START=exec"]
         + host("process", GENERATED_PLUGINS), generated_line),
    ]
    if config.baseline:
        # Another build of xcallback (an older commit's release binary),
        # in the same rounds: the ratio a change's start-up cost is judged by.
        contenders.append(("baseline process · 100 plug-ins",
                           [config.baseline] + host("process", GENERATED_PLUGINS)[1:], generated_line))
    rounds = {label: [] for label, _, _ in contenders}
    for _ in range(config.startup_reps):
        for label, command, line in contenders:
            rounds[label].append(one_startup(command, line))
    rows = {}
    for label, _, _ in contenders:
        ready = [r["ready_ms"] for r in rounds[label]]
        done = [r["exit_ms"] for r in rounds[label]]
        rows[label] = {"ready_median_ms": statistics.median(ready), "ready_min_ms": min(ready),
                       "ready_max_ms": max(ready), "exit_median_ms": statistics.median(done),
                       "reps": len(ready)}
        log("  %-46s ready: median %7.2f ms  min %7.2f ms   exit: median %7.2f ms"
            % (label, rows[label]["ready_median_ms"], rows[label]["ready_min_ms"], rows[label]["exit_median_ms"]))
    floor = rows["cat (exec floor)"]["ready_median_ms"]
    ratios = {label: row["ready_median_ms"] / floor for label, row in rows.items() if not label.startswith("cat")}
    # Workers start one after another: the difference over 100 of them is
    # what the sandbox adds to one worker's start.
    sandbox_ms = (rows["xcallback process · 100 plug-ins"]["ready_median_ms"]
                  - rows["xcallback process · 100 plug-ins · sandbox off"]["ready_median_ms"]) / 100
    log("  sandbox set-up per worker start: %.2f ms" % sandbox_ms)
    zygote_speedup = (rows["xcallback process · 100 plug-ins · exec"]["ready_median_ms"]
                      / rows["xcallback process · 100 plug-ins"]["ready_median_ms"])
    log("  100 plug-ins, executed / forked from the zygote: %.2fx" % zygote_speedup)
    result = {"rows": rows, "ratios_vs_cat": ratios, "sandbox_ms_per_worker": sandbox_ms,
              "zygote_speedup": zygote_speedup}
    if config.baseline:
        result["vs_baseline"] = (rows["xcallback process · 100 plug-ins"]["ready_median_ms"]
                                 / rows["baseline process · 100 plug-ins"]["ready_median_ms"])
        log("  100 plug-ins, this build / %s: %.2fx" % (config.baseline, result["vs_baseline"]))
    return result


def one_startup(command, line):
    """Exec to first record: start the process, write one request, read until its record
    arrives; then close stdin and wait for the exit."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               cwd=ROOT)
    os.write(process.stdin.fileno(), line)
    received = b""
    while b"\n" not in received:
        chunk = os.read(process.stdout.fileno(), 65536)
        if not chunk:
            raise SystemExit("%s ended before answering" % " ".join(command))
        received += chunk
    ready = time.perf_counter()
    process.stdin.close()
    process.stdout.read()
    process.wait()
    finished = time.perf_counter()
    if process.returncode != 0:
        raise SystemExit("%s exited with %d" % (" ".join(command), process.returncode))
    return {"ready_ms": (ready - started) * 1e3, "exit_ms": (finished - started) * 1e3}


# --------------------------------------------------------------------------
# 4. Memory
# --------------------------------------------------------------------------

def memory(config, calc_path, throughput_result):
    """Peak RSS for count/10 and count URLs (the latter from the throughput runs), and for
    3 x count (the stream three times over) to show where it levels off."""
    small = config.count // 10
    small_path = prefix_stream(calc_path, small)
    triple_path = calc_path.replace(".txt", "-x3.txt")
    if not os.path.exists(triple_path):
        with open(triple_path + ".tmp", "wb") as out:
            for _ in range(3):
                with open(calc_path, "rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        os.replace(triple_path + ".tmp", triple_path)
    rows = {}
    for isolation, label in (("none", "xcallback none · calculator"), ("process", "xcallback process · calculator")):
        measured = [timed_run(host(isolation, SAMPLE_PLUGINS), small_path, log_name="memory-" + isolation)
                    for _ in range(2)]
        small_rss = max(r["maxrss_kib"] for r in measured)
        large_rss = throughput_result["rows"][label]["maxrss_kib"]
        triple_rss = timed_run(host(isolation, SAMPLE_PLUGINS), triple_path, log_name="memory-" + isolation)["maxrss_kib"]
        rows[isolation] = {"urls_small": small, "urls_large": config.count, "urls_triple": 3 * config.count,
                           "maxrss_small_kib": small_rss, "maxrss_large_kib": large_rss,
                           "maxrss_triple_kib": triple_rss,
                           "ratio_large_vs_small": large_rss / small_rss,
                           "ratio_triple_vs_large": triple_rss / large_rss}
        log("  %-8s peak RSS %d URLs: %7.1f MiB   %d URLs: %7.1f MiB   %d URLs: %7.1f MiB"
            % (isolation, small, small_rss / 1024, config.count, large_rss / 1024, 3 * config.count,
               triple_rss / 1024))
    return {"rows": rows,
            "note": "ru_maxrss from wait4(2) in runstat: in process mode the maximum over the host and the "
                    "workers it reaped"}


# --------------------------------------------------------------------------
# 4b. Costs per request: heap allocations and system calls
# --------------------------------------------------------------------------

def costs(config, streams):
    """Heap allocations (malloc_count.c, preloaded) and system calls (strace -f -c, when strace is
    installed) per request. Each contender runs a short and a long prefix of its stream, and the
    figure is the difference over the extra requests, so start-up and shutdown do not count.
    In process mode both add up the host and its workers; those rows run with `--sandbox off`,
    since a sandboxed worker gets only a few environment variables (not LD_PRELOAD), and the
    sandbox adds nothing per request (the throughput section's on/off ratio)."""
    small, large = (5_000, 55_000) if config.count < 1_000_000 else (20_000, 220_000)
    contenders = [
        ("xcallback none · calculator", "calc", host("none", SAMPLE_PLUGINS)),
        ("xcallback process · calculator", "calc", host("process", SAMPLE_PLUGINS, extra=["--sandbox", "off"])),
        ("xcallback none · noop (C)", "noop", host("none", BENCH_PLUGINS)),
        ("xcallback process · noop (C)", "noop", host("process", BENCH_PLUGINS, extra=["--sandbox", "off"])),
    ]
    strace = shutil.which("strace")
    counts = os.path.join(WORK, "malloc-count.out")
    trace = os.path.join(WORK, "strace.out")

    def allocations(command, path):
        # One counter every process adds to: 8 shared bytes (malloc_count.c).
        with open(counts, "wb") as counter:
            counter.write(bytes(8))
        environment = dict(os.environ, LD_PRELOAD=MALLOC_COUNT, MALLOC_COUNT_FILE=counts)
        with open(path, "rb") as stdin:
            subprocess.run(command, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                           env=environment, check=True)
        with open(counts, "rb") as counter:
            return int.from_bytes(counter.read(8), "little")

    def system_calls(command, path):
        with open(path, "rb") as stdin:
            subprocess.run([strace, "-f", "-c", "-o", trace] + command, stdin=stdin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, cwd=ROOT, check=True)
        with open(trace) as report:
            for line in report:
                if line.split()[-1:] == ["total"]:
                    return int(line.split()[3])
        raise SystemExit("no total in %s" % trace)

    rows = {}
    for label, kind, command in contenders:
        paths = [prefix_stream(streams[kind], n) for n in (small, large)]
        allocated = [allocations(command, path) for path in paths]
        row = {"urls_small": small, "urls_large": large,
               "allocations_per_request": (allocated[1] - allocated[0]) / (large - small)}
        if strace:
            calls = [system_calls(command, path) for path in paths]
            row["system_calls_per_request"] = (calls[1] - calls[0]) / (large - small)
        rows[label] = row
        log("  %-34s %6.2f allocations, %s system calls per request"
            % (label, row["allocations_per_request"],
               "%.4f" % row["system_calls_per_request"] if strace else "(no strace)"))
    return {"rows": rows, "strace": bool(strace)}


# --------------------------------------------------------------------------
# 5. Route table
# --------------------------------------------------------------------------

def routes(config):
    command = [ROUTE_BENCH, "10,1000,10000", str(config.route_lookups), str(config.route_rounds)]
    log("$ " + " ".join(command))
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in output.splitlines():
        row = json.loads(line)
        row["firstMatch_vs_routingkit"] = row["ours_firstMatch_per_s"] / row["routingkit_per_s"]
        row["matches_next_vs_routingkit"] = row["ours_matches_next_per_s"] / row["routingkit_per_s"]
        rows[str(row["routes"])] = row
        log("  %5d routes: firstMatch %9d/s  matches().next() %9d/s  RoutingKit %9d/s"
            % (row["routes"], row["ours_firstMatch_per_s"], row["ours_matches_next_per_s"], row["routingkit_per_s"]))
    return {"rows": rows}


# --------------------------------------------------------------------------
# 6. Profile (optional)
# --------------------------------------------------------------------------

def profile(calc_path):
    data = os.path.join(WORK, "perf.data")
    report = os.path.join(RESULTS, "profile-none-calculator.txt")
    with open(calc_path, "rb") as stdin:
        subprocess.run(["perf", "record", "-g", "-o", data, "--"] + host("none", SAMPLE_PLUGINS),
                       stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
    flat = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "-g", "none",
                           "--percent-limit", "0.5"], capture_output=True, text=True).stdout
    inclusive = subprocess.run(["perf", "report", "-i", data, "--children", "--stdio", "-g", "none", "--sort", "sym",
                                "--percent-limit", "1.5"], capture_output=True, text=True).stdout
    text = ("# perf record -g (frame pointers) of: xcallback run --isolation none, sample plug-ins, calc stream\n"
            "# 1. self time per symbol\n" + flat + "\n# 2. inclusive time per function (children included)\n" + inclusive)
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True, text=True)
    with open(report, "w") as out:
        out.write(demangled.stdout if demangled.returncode == 0 else text)
    log("profile written to %s" % os.path.relpath(report, ROOT))
    return os.path.relpath(report, ROOT)


# --------------------------------------------------------------------------
# Targets, table, JSON
# --------------------------------------------------------------------------

def targets(results):
    checks = []

    def target(name, value, goal, met, unit=""):
        checks.append({"target": name, "measured": value, "goal": goal, "met": bool(met), "unit": unit})

    if "throughput" in results:
        t = results["throughput"]
        rate = t["rows"]["xcallback none · calculator"]["urls_per_s"]
        target("in-process calculator throughput", rate, ">= 1,000,000 URLs/s", rate >= 1e6, "URLs/s")
        r = t["ratios"]
        rate = t["rows"]["xcallback none · noop (C)"]["urls_per_s"]
        target("in-process no-op plug-in throughput", rate, ">= 2,000,000 URLs/s", rate >= 2e6, "URLs/s")
        target("in-process calculator vs the C reference", r["none_calc_vs_c_reference"], ">= 0.6",
               r["none_calc_vs_c_reference"] >= 0.6, "x")
        target("in-process calculator vs Foundation peer", r["none_calc_vs_foundation"], ">= 5x",
               r["none_calc_vs_foundation"] >= 5, "x")
        target("in-process calculator vs Python peer", r["none_calc_vs_python"], ">= 25x",
               r["none_calc_vs_python"] >= 25, "x")
        target("process isolation vs in-process (calculator)", r["process_vs_none_calc"], ">= 0.9",
               r["process_vs_none_calc"] >= 0.9, "x")
        target("process isolation vs in-process (noop C)", r["process_vs_none_noop"], ">= 0.5",
               r["process_vs_none_noop"] >= 0.5, "x")
        for kind in ("calc", "noop"):
            value = r["sandbox_on_vs_off_" + kind]
            target("sandbox on vs off (%s)" % kind, value, ">= 0.95 (within 5%)", value >= 0.95, "x")
    if "costs" in results:
        rows = results["costs"]["rows"]
        value = rows["xcallback none · calculator"]["allocations_per_request"]
        target("heap allocations per request, in-process calculator", value, "<= 4", value <= 4)
        if results["costs"]["strace"]:
            for label in ("xcallback none · calculator", "xcallback process · calculator"):
                value = rows[label]["system_calls_per_request"]
                target("system calls per request, %s" % label.replace("xcallback ", ""), value, "<= 0.05", value <= 0.05)
    if "latency" in results:
        rows = results["latency"]["rows"]
        value = rows["xcallback none"]["p99_ms"]
        target("FIFO p99 in-process at %d req/s" % results["latency"]["rate_per_s"], value, "< 1 ms", value < 1, "ms")
        value = rows["xcallback process"]["p99_ms"]
        target("FIFO p99 process isolation at %d req/s" % results["latency"]["rate_per_s"], value, "< 2 ms",
               value < 2, "ms")
    if "startup" in results:
        value = results["startup"]["rows"]["xcallback none · samples"]["ready_median_ms"]
        target("start-up to first record, in-process, samples (median)", value, "< 50 ms", value < 50, "ms")
        value = results["startup"]["sandbox_ms_per_worker"]
        target("sandbox set-up per worker start", value, "a few ms (< 5 ms)", value < 5, "ms")
    if "memory" in results:
        for isolation, row in results["memory"]["rows"].items():
            value = row["ratio_large_vs_small"]
            target("peak RSS %d vs %d URLs (%s)" % (row["urls_large"], row["urls_small"], isolation), value,
                   "<= 1.25x (about the same)", value <= 1.25, "x")
            value = row["ratio_triple_vs_large"]
            target("peak RSS %d vs %d URLs (%s): levelled off" % (row["urls_triple"], row["urls_large"], isolation),
                   value, "<= 1.10x", value <= 1.10, "x")
    if "routes" in results:
        for size, row in results["routes"]["rows"].items():
            value = row["firstMatch_vs_routingkit"]
            # firstMatch is what the host runs per request; the full candidate
            # walk (matches()) runs only after a handler declines.
            target("route lookup vs RoutingKit, %s routes (firstMatch, the host's path)" % size, value, ">= 1x",
                   value >= 1, "x")
            value = row["matches_next_vs_routingkit"]
            target("route lookup vs RoutingKit, %s routes (matches().next(), after a decline only)" % size, value,
                   ">= 1x", value >= 1, "x")
    return checks


def table(results):
    lines = []
    machine = results["machine"]
    lines.append("xcallback benchmark suite (%s run, %s)" % (results["mode"], results["finished"]))
    lines.append("machine: %s, %d cores, %.1f GiB, %s; %s; load average %s before, %s after"
                 % (machine["cpu"], machine["cores"], machine["memory_gib"], machine["kernel"],
                    machine["swift"], machine["load_before"], machine["load_after"]))
    lines.append("source: commit %s, %d uncommitted changes under Sources/, Plugins/, Package.swift"
                 % (machine["source"]["commit"], machine["source"]["uncommitted_changes_in_sources"]))
    if "checks" in results:
        same = all(row["same_as_xcallback"] for row in results["checks"].values())
        lines.append("same job: every calc contender gives xcallback's records on a 2,000-line sample: %s"
                     % ("yes" if same else "NO (see checks in the JSON)"))
    if "c_reference_check" in results:
        check = results["c_reference_check"]
        lines.append("C reference: byte-identical to xcallback, in order, on all %s calc records and %s hard-number "
                     "requests (%s)" % (format(check["calc"]["records"], ","), format(check["calchard"]["records"], ","),
                                        check["self_check"].replace("self-check: ", "self-check ")))
    if "throughput" in results:
        t = results["throughput"]
        floor = t["rows"]["cat (I/O floor)"]["urls_per_s"]
        lines.append("")
        lines.append("Throughput: %s URLs of ~%.0f bytes, stdin from a file, stdout to /dev/null, best of %d rounds"
                     % (format(results["config"]["count"], ","), results["streams"]["calc"]["average_bytes"],
                        results["config"]["rounds"]))
        lines.append("  %-46s %12s %9s %9s %10s" % ("contender", "URLs/s", "ns/URL", "CPU ns", "vs cat"))
        for label, row in t["rows"].items():
            lines.append("  %-46s %12s %9.0f %9.0f %9.3fx" % (label, format(round(row["urls_per_s"]), ","),
                                                               row["ns_per_url"], row["cpu_ns_per_url"],
                                                               row["urls_per_s"] / floor))
        r = t["ratios"]
        lines.append("  ratios: none·calc / Foundation %.2fx, / Python %.1fx; process / none: calc %.2f, noop %.2f, mixed %.2f"
                     % (r["none_calc_vs_foundation"], r["none_calc_vs_python"], r["process_vs_none_calc"],
                        r["process_vs_none_noop"], r["process_vs_none_mixed"]))
        lines.append("  share of the C reference: none·calc %.3f, process·calc %.3f; sandbox on / off: calc %.2f, noop %.2f"
                     % (r["none_calc_vs_c_reference"], r["process_calc_vs_c_reference"],
                        r["sandbox_on_vs_off_calc"], r["sandbox_on_vs_off_noop"]))
    if "latency" in results:
        l = results["latency"]
        lines.append("")
        lines.append("Latency through a FIFO: %d req/s for %g s (after %d warm-up requests), write to record read, best of %d rounds"
                     % (l["rate_per_s"], l["seconds"], l["warmup_requests"], results["config"]["latency_rounds"]))
        lines.append("  %-46s %9s %9s %9s %9s %8s %8s" % ("contender", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "missing",
                                                          "p99/cat"))
        floor = l["rows"]["cat (FIFO floor)"]["p99_ms"]
        for label, row in l["rows"].items():
            lines.append("  %-46s %9.3f %9.3f %9.3f %9.3f %8d %7.1fx" % (label, row["p50_ms"], row["p99_ms"],
                                                                        row["p999_ms"], row["max_ms"], row["missing"],
                                                                        row["p99_ms"] / floor))
    if "startup" in results:
        s = results["startup"]
        lines.append("")
        lines.append("Start-up: exec to first record (one request on stdin), %d reps each, alternating"
                     % s["rows"]["cat (exec floor)"]["reps"])
        lines.append("  %-46s %10s %9s %12s %8s" % ("contender", "median ms", "min ms", "exit med ms", "vs cat"))
        floor = s["rows"]["cat (exec floor)"]["ready_median_ms"]
        for label, row in s["rows"].items():
            lines.append("  %-46s %10.2f %9.2f %12.2f %7.1fx" % (label, row["ready_median_ms"], row["ready_min_ms"],
                                                                row["exit_median_ms"], row["ready_median_ms"] / floor))
    if "memory" in results:
        lines.append("")
        lines.append("Memory: peak RSS (ru_maxrss), calculator stream")
        any_row = next(iter(results["memory"]["rows"].values()))
        lines.append("  %-20s %14s %14s %14s %10s %10s" % (
            "contender", format(any_row["urls_small"], ",") + " URLs", format(any_row["urls_large"], ",") + " URLs",
            format(any_row["urls_triple"], ",") + " URLs", "large/small", "3x/large"))
        for isolation, row in results["memory"]["rows"].items():
            lines.append("  %-20s %10.1f MiB %10.1f MiB %10.1f MiB %10.2fx %9.2fx"
                         % ("xcallback " + isolation, row["maxrss_small_kib"] / 1024, row["maxrss_large_kib"] / 1024,
                            row["maxrss_triple_kib"] / 1024, row["ratio_large_vs_small"], row["ratio_triple_vs_large"]))
    if "costs" in results:
        lines.append("")
        lines.append("Costs per request (long minus short prefix of the stream; process mode counts the workers too)")
        lines.append("  %-46s %12s %14s" % ("contender", "allocations", "system calls"))
        for label, row in results["costs"]["rows"].items():
            calls = row.get("system_calls_per_request")
            lines.append("  %-46s %12.2f %14s" % (label, row["allocations_per_request"],
                                                   "%.4f" % calls if calls is not None else "(no strace)"))
    if "routes" in results:
        lines.append("")
        lines.append("Route table: lookups/s, %s hits per size, best of %d (mixed action, controller/action and :id routes)"
                     % (format(results["config"]["route_lookups"], ","), results["config"]["route_rounds"]))
        lines.append("  %-8s %14s %16s %14s %11s %11s" % ("routes", "firstMatch", "matches().next", "RoutingKit",
                                                         "first/RK", "next/RK"))
        for size, row in results["routes"]["rows"].items():
            lines.append("  %-8s %14s %16s %14s %10.2fx %10.2fx"
                         % (size, format(row["ours_firstMatch_per_s"], ","), format(row["ours_matches_next_per_s"], ","),
                            format(row["routingkit_per_s"], ","), row["firstMatch_vs_routingkit"],
                            row["matches_next_vs_routingkit"]))
    if results.get("targets"):
        lines.append("")
        lines.append("Targets")
        for check in results["targets"]:
            value = check["measured"]
            shown = format(round(value), ",") if check["unit"] == "URLs/s" else "%.3g" % value
            lines.append("  [%s] %-72s %12s %-4s (goal %s)" % ("met " if check["met"] else "MISS", check["target"], shown,
                                                              check["unit"], check["goal"]))
    lines.append("")
    lines.append("total time %.0f s; JSON: %s" % (results["duration_s"], os.path.relpath(results["json"], ROOT)))
    return "\n".join(lines)


def machine_description():
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "Sources", "Plugins", "Package.swift"], cwd=ROOT,
                           capture_output=True, text=True).stdout.splitlines()
    return {"source": {"commit": commit or "?", "uncommitted_changes_in_sources": len(dirty)},
            "cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory_gib, "kernel": platform.release(),
            "swift": swift[0] if swift else "?", "python": platform.python_version(),
            "load_before": "%.2f" % os.getloadavg()[0]}


def check_only(products):
    """`--check`: the suite's C pieces build from the repository as it is, its
    plug-in folders load, and the C reference still does xcallback's job, in a
    work folder of its own (a timed run's is left alone)."""
    global WORK, XCALLBACK, PACER, RUNSTAT, C_REFERENCE, MALLOC_COUNT, BENCH_PLUGINS, SAMPLE_PLUGINS
    global GENERATED_PLUGINS, LOGS
    WORK = os.path.join(ROOT, "Benchmarks", ".build", "suite-check")
    XCALLBACK = os.path.join(products, "xcallback")
    PACER, RUNSTAT, C_REFERENCE = (os.path.join(WORK, "bin", name) for name in ("pacer", "runstat", "c_reference"))
    MALLOC_COUNT = os.path.join(WORK, "bin", "libmalloc_count.so")
    BENCH_PLUGINS, SAMPLE_PLUGINS, GENERATED_PLUGINS = (
        os.path.join(WORK, "plugins", name) for name in ("bench", "samples", "gen100"))
    LOGS = os.path.join(WORK, "logs")
    build(skip_swift=True, products=products)
    loaded = check_plugins()
    check_c_reference({"calc": stream("calc", 2_000)}, stream("calchard", 2_000))
    print("benchmark suite check: C pieces built, plug-in folders %s, C reference byte-identical to %s"
          % (loaded, XCALLBACK))
    return 0


def main():
    parser = argparse.ArgumentParser(description="xcallback benchmark suite")
    parser.add_argument("--quick", action="store_true", help="smoke run: 100,000 URLs, 2 s of latency, fewer rounds")
    parser.add_argument("--no-build", action="store_true", help="skip the swift builds (use what .build holds)")
    parser.add_argument("--only", default="throughput,latency,startup,memory,costs,routes",
                        help="comma-separated sections (memory needs throughput)")
    parser.add_argument("--rounds", type=int, help="throughput rounds (default 3, quick 2)")
    parser.add_argument("--count", type=int, help="URLs per throughput run (default 1,000,000, quick 100,000)")
    parser.add_argument("--profile", action="store_true",
                        help="also perf record -g the in-process calculator run; report in Benchmarks/results/")
    parser.add_argument("--check", metavar="PRODUCTS",
                        help="no timing: build the C pieces, and check that the C reference still gives the records "
                             "of the xcallback in PRODUCTS (with its sample plug-ins, e.g. .build/debug) on 2,000 "
                             "calc and 2,000 hard requests; what the tests run")
    parser.add_argument("--json", help="where to write the JSON (default Benchmarks/results/latest.json for a full "
                                        "run, latest-quick.json or latest-partial.json otherwise)")
    parser.add_argument("--baseline", metavar="XCALLBACK",
                        help="another xcallback binary (an older commit's release build) whose start-up of the "
                             "100 generated plug-ins runs in the same rounds; the section reports the ratio")
    args = parser.parse_args()
    if args.check:
        return check_only(os.path.abspath(args.check))

    quick = args.quick
    config = argparse.Namespace(
        count=args.count or (100_000 if quick else 1_000_000),
        rounds=args.rounds or (2 if quick else 3),
        python_rounds=1 if quick else 2,
        rate=1000,
        latency_seconds=2 if quick else 5,
        latency_rounds=1 if quick else 2,
        startup_reps=5 if quick else 15,
        route_lookups=200_000 if quick else 1_000_000,
        route_rounds=2 if quick else 5,
        baseline=os.path.abspath(args.baseline) if args.baseline else None,
    )
    sections = [s.strip() for s in args.only.split(",") if s.strip()]
    if "memory" in sections and "throughput" not in sections:
        raise SystemExit("--only memory needs throughput too (it reuses the large runs' peak RSS)")
    started = time.perf_counter()
    results = {"suite_version": 1, "mode": "quick" if quick else "full", "machine": machine_description(),
               "config": vars(config), "sections": sections,
               "started": datetime.datetime.now().isoformat(timespec="seconds")}

    results["build_s"] = build(args.no_build)
    results["plugins_loaded"] = check_plugins()
    streams = {"calc": stream("calc", config.count), "noop": stream("noop", config.count),
               "mixed": stream(MIX, config.count)}
    templates = stream("calc", 1000, label="~ID~")
    results["streams"] = {}
    for kind, path in streams.items():
        lines, average = line_stats(path)
        results["streams"][kind] = {"path": os.path.relpath(path, ROOT), "lines": lines, "average_bytes": average,
                                    "spec": MIX if kind == "mixed" else kind, "seed": SEED}
    results["checks"] = check_outputs(streams["calc"])
    if "throughput" in sections:
        log("== C reference check")
        results["c_reference_check"] = check_c_reference(streams, stream("calchard", 20_000))

    if "throughput" in sections:
        log("== throughput")
        results["throughput"] = throughput(config, streams)
    if "latency" in sections:
        log("== latency")
        results["latency"] = latency(config, templates)
    if "startup" in sections:
        log("== start-up")
        results["startup"] = startup(config)
    if "memory" in sections:
        log("== memory")
        results["memory"] = memory(config, streams["calc"], results["throughput"])
    if "costs" in sections:
        log("== costs")
        results["costs"] = costs(config, streams)
    if "routes" in sections:
        log("== routes")
        results["routes"] = routes(config)
    if args.profile:
        log("== profile")
        results["profile"] = profile(streams["calc"])

    results["targets"] = targets(results)
    results["machine"]["load_after"] = "%.2f" % os.getloadavg()[0]
    results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")
    results["duration_s"] = time.perf_counter() - started
    if args.json:
        results["json"] = os.path.abspath(args.json)
    else:
        complete = set(sections) >= {"throughput", "latency", "startup", "memory", "costs", "routes"}
        name = "latest-quick.json" if quick else "latest.json" if complete else "latest-partial.json"
        results["json"] = os.path.join(RESULTS, name)
    os.makedirs(os.path.dirname(results["json"]), exist_ok=True)
    with open(results["json"], "w") as out:
        json.dump(results, out, indent=2, ensure_ascii=False)
        out.write("\n")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
