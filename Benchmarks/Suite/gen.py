#!/usr/bin/env python3
"""Seeded generator of realistic x-callback-url request streams.

Every line is an x-callback URL of about 280 bytes, like the ones
Benchmarks/URLParsing generates: several action parameters, a percent-encoded
`text` label (non-ASCII, spaces, `&`, `+`), an `x-source`, and percent-encoded
`x-success` / `x-error` callback URLs that carry queries of their own.

Kinds (one per line, or mixed by weight):
  calc     calc://x-callback-url/{add,subtract,multiply,divide}?lhs=&rhs=&text=...  (rhs never 0)
  calchard calc requests that are hard to answer exactly: operands with many digits,
           far exponents, negative zero, zero divisors, overflow, malformed and missing
           operands, labels and callbacks of every shape the record encoding handles
           (the suite checks the C reference against xcallback on them)
  noop     bench://x-callback-url/noop?...   (the suite's trivial C plug-in)
  pokedex  pokedex://pokemons/<id>?...  or  pokedex://pokemons?type=|types=...
  unknown  a scheme no plug-in routes (NotFoundAction)

Usage:
  gen.py KIND[=WEIGHT][,KIND=WEIGHT...] COUNT [--seed N] [--label TEXT] > stream.txt
e.g. gen.py calc 1000000, gen.py calc=60,pokedex=30,unknown=10 100000.
`--label ~ID~` makes every calc label that literal (latency templates).
"""
import math
import random
import struct
import sys

# Bump when the output changes, so cached streams are regenerated.
VERSION = 1

_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_ENCODED = [chr(b) if b in _UNRESERVED else "%%%02X" % b for b in range(256)]


def encode(text):
    """RFC 3986 percent-encoding: only unreserved bytes stay literal."""
    return "".join(_ENCODED[b] for b in text.encode("utf-8"))


OPERATIONS = ["add", "subtract", "multiply", "divide"]
SOURCES = ["Shortcuts", "Drafts", "Workflow", "Launch Center Pro", "Scriptable"]
WORDS = ["total", "sum", "price", "net", "café", "weekly report", "Q3", "tax & fees", "a+b", "日本"]
TYPES = ["normal", "fire", "water", "grass", "electric", "ice", "fighting", "poison", "ground",
         "flying", "psychic", "bug", "rock", "ghost", "dragon", "dark", "steel", "fairy"]
APPS = ["shortcuts", "drafts", "workflow", "launch", "scriptable"]


def _decimal(rng, limit, scale):
    value = rng.randint(-limit, limit)
    return repr(value / scale)


def _callbacks(rng):
    """x-source, x-success and x-error, percent-encoded, as one query tail."""
    ident = "%x" % rng.getrandbits(64)
    app = rng.choice(APPS)
    success = "%s://x-callback-url/run?name=Sum&id=%s&step=%d" % (app, ident, rng.randint(1, 9))
    error = "%s://x-callback-url/error?id=%s&retry=%s" % (app, ident, rng.choice(["true", "false"]))
    return ("&x-source=" + encode(rng.choice(SOURCES))
            + "&x-success=" + encode(success)
            + "&x-error=" + encode(error))


def _label(rng):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))


def calc(rng, label=None):
    lhs = _decimal(rng, 100_000, 100)
    rhs = _decimal(rng, 100_000, 1000)
    if float(rhs) == 0:
        rhs = "0.5"
    text = label if label is not None else encode(_label(rng))
    return ("calc://x-callback-url/%s?lhs=%s&rhs=%s&text=%s" % (rng.choice(OPERATIONS), lhs, rhs, text)
            + _callbacks(rng))


# Operands that test the number code rather than the URL code.
HARD_OPERANDS = [
    "0", "-0", "0.0", "-0.000", "0e10", "-0e-5", "+0", "00000", "0.5", "-.5", "5.", "+5", "1E5", "1e+5",
    "1e308", "-1.7976931348623157e308", "1.7976931348623157e308", "1e-320", "4.9e-324", "5e-324",
    "2.2250738585072014e-308", "2.2250738585072011e-308", "9007199254740993", "9007199254740992",
    "123456789012345678901234567890", "0.1", "0.2", "0.3", "1e22", "1e23", "9.999999999999999e22",
    "0.1234567890123455", "0.12345678901234549", "999999999999999.9", "99999999999999.95",
    "0.99999999999999995", "0.999999999999999944", "1e15", "1e16", "1e17", "1e-5", "1e-6", "1e-7",
    "1.5e-6", "123e-10", "0.000001", "0.0000015", "1000000000000000", "999999999999999",
    "3.0000000000000004", "2.675", "1.005", "0.30000000000000004", "4.35", "8.589973e9",
    "7.2057594037927933e16", "1.00000000000000000000000000000000000000001", "0.000000000000000000001",
    "18014398509481984", "18014398509481985", "36028797018963968", "1e-22", "1e-23", "6.02214076e23",
]
INVALID_OPERANDS = [
    "", "abc", "1e", ".", "-", "+", "nan", "inf", "-inf", "0x10", " 1", "1 ", "1,5", "1e400", "-1e309",
    "--1", "1.2.3", "e5", ".e1", "1e+", "\u0661", "12a", "1_000", "9" * 90 + "x", "0." + "3" * 85 + "e",
]


def _hard_operand(rng):
    roll = rng.random()
    if roll < 0.25:
        return rng.choice(HARD_OPERANDS)
    if roll < 0.45:
        return _decimal(rng, 100_000, 100)
    if roll < 0.60:
        # Any finite double, written as Python writes it (shortest, maybe with an exponent).
        while True:
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if math.isfinite(value):
                return repr(value)
    if roll < 0.75:
        # 16 to 30 significant digits, the point anywhere, sometimes an exponent.
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(16, 30)))
        at = rng.randint(1, len(digits))
        text = digits[:at] + "." + digits[at:]
        if rng.random() < 0.4:
            text += "e%d" % rng.randint(-30, 30)
        return ("-" if rng.random() < 0.5 else "") + text
    if roll < 0.95:
        # Around the range where results need an exponent or many zeros.
        return "%se%d" % (_decimal(rng, 100_000, 1000), rng.randint(-12, 22))
    return rng.choice(INVALID_OPERANDS)


def _hard_callback(rng, app, path):
    """A callback URL of one of the shapes xcallback appends to differently."""
    base = "%s://x-callback-url/%s" % (app, path)
    return rng.choice([
        base, base + "?id=1", base + "?", base + "?id=1&", base + "?q=why?", base + "#frag",
        base + "?id=1#frag?x", base + "?a=1&b=2#", base + "?note=tab\there", base + "?line=a\nb",
        base + "?caf\u00e9=\u65e5\u672c", "HTTPS://example.com/" + path + "?x=%41",
    ])


def calchard(rng, label=None):
    operation = rng.choice(OPERATIONS)
    scheme = rng.choice(["calc", "calc", "calc", "CALC", "Calc"])
    host = rng.choice(["x-callback-url", "x-callback-url", "X-Callback-URL", "x%2Dcallback-url"])
    path = rng.choice(["/" + operation, "/" + operation, "//" + operation + "/", "/%%%02X%s" % (ord(operation[0]), operation[1:])])
    items = []
    if operation == "divide" and rng.random() < 0.1:
        rhs = rng.choice(["0", "-0", "0.000", "0e99", "-0.0e-3"])
    else:
        rhs = _hard_operand(rng)
    for name, value in (("lhs", _hard_operand(rng)), ("rhs", rhs)):
        roll = rng.random()
        if roll < 0.04:
            continue                                          # missing
        written = encode(value) if rng.random() < 0.7 else value.replace("%", "%25").replace("&", "%26")
        written = written.replace("#", "%23").replace(" ", "%20").replace("\n", "%0A")
        items.append(("l%68s" if name == "lhs" and roll < 0.06 else name, written))
        if roll > 0.97:
            items.append((name, encode(_hard_operand(rng))))  # repeated: the first counts
    roll = rng.random()
    if roll < 0.7:
        items.append(("text", encode(_label(rng) if rng.random() < 0.8 else rng.choice(
            ["", "=", "a=b&c", "50%", "\u00e9\u0301", "x+y", "tab\tstop", "~-._"]))))
    app = rng.choice(APPS)
    ident = "%x" % rng.getrandbits(32)
    if rng.random() < 0.85:
        items.append(("x-success" if rng.random() < 0.9 else "x%2Dsuccess",
                      encode(_hard_callback(rng, app, "ok?id=" + ident if rng.random() < 0.1 else "ok"))))
    if rng.random() < 0.8:
        items.append(("x-error", encode(_hard_callback(rng, app, "failed"))))
    if rng.random() < 0.2:
        items.append(("x-cancel", encode(app + "://x-callback-url/cancelled")))
    if rng.random() < 0.3:
        items.append(("x-source", encode(rng.choice(SOURCES))))
    rng.shuffle(items)
    line = "%s://%s%s?%s" % (scheme, host, path, "&".join("%s=%s" % item for item in items))
    if rng.random() < 0.05:
        line += "#fragment"
    if rng.random() < 0.05:
        line = " " + line + " \t"
    return line


def noop(rng, label=None):
    return ("bench://x-callback-url/noop?lhs=%s&rhs=%s&text=%s&mode=%s"
            % (_decimal(rng, 100_000, 100), _decimal(rng, 100_000, 1000),
               label if label is not None else encode(_label(rng)), rng.choice(["fast", "plain"]))
            + _callbacks(rng))


def pokedex(rng, label=None):
    roll = rng.random()
    if roll < 0.6:
        # Mostly known ids, some unknown (NotFound in domain pokedex).
        ident = rng.choice([1, 4, 7, 25, 6, 9, 150, 151]) if rng.random() < 0.8 else rng.randint(152, 999)
        head = "pokedex://pokemons/%d?lang=en&shiny=%s" % (ident, rng.choice(["true", "false"]))
    elif roll < 0.8:
        head = "pokedex://pokemons?type=%s&lang=en" % rng.choice(TYPES)
    else:
        head = "pokedex://pokemons?types=%s&lang=en" % encode(",".join(rng.sample(TYPES, 2)))
    return head + "&note=" + encode(_label(rng)) + _callbacks(rng)


def unknown(rng, label=None):
    return ("nosuch%d://x-callback-url/%s?lhs=%s&text=%s"
            % (rng.randint(1, 9), rng.choice(OPERATIONS), _decimal(rng, 100_000, 100), encode(_label(rng)))
            + _callbacks(rng))


KINDS = {"calc": calc, "calchard": calchard, "noop": noop, "pokedex": pokedex, "unknown": unknown}


def parse_mix(spec):
    """'calc=60,pokedex=30,unknown=10' -> [(function, weight)]."""
    mix = []
    for part in spec.split(","):
        name, _, weight = part.partition("=")
        if name not in KINDS:
            raise SystemExit("gen.py: unknown kind %r (one of %s)" % (name, ", ".join(KINDS)))
        mix.append((KINDS[name], float(weight or 1)))
    return mix


def lines(spec, count, seed=0x5EED, label=None):
    """Yields `count` request lines for the mix `spec`, the same ones for the same seed."""
    rng = random.Random(seed)
    mix = parse_mix(spec)
    functions = [function for function, _ in mix]
    weights = [weight for _, weight in mix]
    if len(functions) == 1:
        function = functions[0]
        for _ in range(count):
            yield function(rng, label)
    else:
        # Choose kinds from a second generator so each kind's lines do not
        # depend on the mix around them.
        chooser = random.Random(seed ^ 0xC0FFEE)
        for _ in range(count):
            yield chooser.choices(functions, weights)[0](rng, label)


def write(path, spec, count, seed=0x5EED, label=None):
    with open(path, "w", encoding="utf-8", newline="\n") as out:
        batch = []
        for line in lines(spec, count, seed, label):
            batch.append(line)
            if len(batch) == 10_000:
                out.write("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            out.write("\n".join(batch) + "\n")


def main(argv):
    args = list(argv)
    seed = 0x5EED
    label = None
    if "--seed" in args:
        index = args.index("--seed")
        seed = int(args[index + 1], 0)
        del args[index:index + 2]
    if "--label" in args:
        index = args.index("--label")
        label = args[index + 1]
        del args[index:index + 2]
    if len(args) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = sys.stdout
    for line in lines(args[0], int(args[1]), seed, label):
        out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
