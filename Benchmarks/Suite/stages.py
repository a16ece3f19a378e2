#!/usr/bin/env python3
"""Where a request's CPU time goes, stage by stage, from a perf profile.

    python3 Benchmarks/Suite/stages.py [--host PATH] [--plugins DIR] [--isolation none|process] STREAM

Runs the host under `perf record` (self time per symbol, no call graphs),
sorts every symbol into a stage by its name, and prints microseconds per
request for each: parse, route, call (the plug-in's own code), outcome,
encode, I/O, memory (malloc, free, reference counting), other. A symbol's
stage comes from the first pattern below that matches it, so the split is
an approximation of where time goes, not a call-graph attribution; point
it at an older build with --host to compare before and after.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

STAGES = [
    ("memory", [r"swift_retain", r"swift_release", r"swift_bridgeObject", r"RefCounts", r"swift_allocObject",
                r"swift_deallocObject", r"swift_slowAlloc", r"swift_slowDealloc", r"_swift_release_dealloc",
                r"\bmalloc\b", r"\bfree\b", r"cfree", r"_int_malloc", r"_int_free", r"malloc_consolidate",
                r"swift_arrayDestroy", r"swift_isUniquelyReferenced"]),
    ("parse", [r"RequestLine", r"RequestURLParser", r"RequestURL", r"UTF8Validation", r"PercentEncoding.*decode",
               r"ByteSearch", r"NativeRequest.*fill", r"NativeRequest.*init", r"_fromUTF8Repairing", r"_allASCII",
               r"_uncheckedFromUTF8", r"WireReader", r"WorkerFrame.*decode", r"FrameReader",
               r"RequestFrame.*read", r"ResultFrame.*(read|answerInPlace|decode)", r"NativeRequestFiller",
               r"NativeRequest.*add"]),
    ("route", [r"LiteralRouteIndex", r"literalRoute", r"RouteTable", r"RouteTrie", r"RouteMatch", r"ByteExactText",
               r"RouteSnapshot", r"hostKey"]),
    ("outcome", [r"ReplyTable", r"HostAPI", r"HandlerResult", r"HandlerCall", r"PendingRequest", r"DeadlineTimer",
                 r"Outcome(?!Record)", r"concludeFast", r"conclude", r"finish", r"endSynchronous", r"pthread_mutex",
                 r"SynchronousCall", r"WorkerEndpoint", r"WorkerProcess.*handle"]),
    ("encode", [r"CallbackURL", r"OutputFormat", r"OutcomeRecord", r"writeLineSafe", r"PercentEncoding.*encode",
                r"WireWriter", r"WorkerFrame.*encode", r"RequestFrame.*write",
                r"ResultFrame.*write", r"LaneRequestContent", r"OutputSink", r"OutcomeTally"]),
    ("io", [r"\[k\]", r"LineReader", r"BufferedWriter", r"InputBuffer", r"__libc_read", r"__libc_write", r"memmove",
            r"memcpy", r"HandoffLoop", r"BatchingThread"]),
]


def stage_of(line, plugin_objects):
    if any(obj in line for obj in plugin_objects):
        return "call"
    for stage, patterns in STAGES:
        if any(re.search(p, line) for p in patterns):
            return stage
    return "other"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.normpath(os.path.join(here, "..", ".."))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=os.path.join(root, ".build", "release", "xcallback"))
    parser.add_argument("--plugins", default=os.path.join(root, "Benchmarks", ".build", "suite", "plugins", "samples"))
    parser.add_argument("--isolation", default="none")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("stream")
    args = parser.parse_args()
    with open(args.stream, "rb") as source:
        count = sum(1 for _ in source)
    plugin_objects = [name for name in os.listdir(args.plugins) if name.endswith(".so")] + ["strtod", "Float64ToASCII",
                                                                                         "XCallbackPluginKit", "DecimalText"]
    with tempfile.TemporaryDirectory() as work:
        data = os.path.join(work, "perf.data")
        with open(args.stream, "rb") as stdin:
            subprocess.run(["perf", "record", "-q", "-o", data, "--", args.host, "run", "--isolation", args.isolation,
                            "--plugins", args.plugins], stdin=stdin, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
        report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--stdio", "--sort", "dso,sym",
                                 "-F", "period,dso,sym", "--percent-limit", "0"], capture_output=True, text=True).stdout
    totals = {}
    all_ns = 0
    for line in report.splitlines():
        match = re.match(r"\s*(\d+)\s+(.*)", line)
        if not match or line.startswith("#"):
            continue
        period = int(match.group(1))  # cpu-clock: nanoseconds
        stage = stage_of(match.group(2), plugin_objects)
        totals[stage] = totals.get(stage, 0) + period
        all_ns += period
    order = ["parse", "route", "call", "outcome", "encode", "io", "memory", "other"]
    figures = {stage: totals.get(stage, 0) / count / 1000 for stage in order}
    figures["total"] = all_ns / count / 1000
    if args.json:
        import json
        print(json.dumps(figures))
    else:
        print("µs of CPU per request, %s, %s requests:" % (args.isolation, format(count, ",")))
        for stage in order + ["total"]:
            print("  %-8s %6.3f" % (stage, figures[stage]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
