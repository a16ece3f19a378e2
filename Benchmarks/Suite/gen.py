#!/usr/bin/env python3
"""Seeded generator of realistic x-callback-url request streams.

Every line is an x-callback URL of about 280 bytes, like the ones
Benchmarks/URLParsing generates: several action parameters, a percent-encoded
`text` label (non-ASCII, spaces, `&`, `+`), an `x-source`, and percent-encoded
`x-success` / `x-error` callback URLs that carry queries of their own.

Kinds (one per line, or mixed by weight):
  calc     calc://x-callback-url/{add,subtract,multiply,divide}?lhs=&rhs=&text=...  (rhs never 0)
  noop     bench://x-callback-url/noop?...   (the suite's trivial C plug-in)
  pokedex  pokedex://pokemons/<id>?...  or  pokedex://pokemons?type=|types=...
  unknown  a scheme no plug-in routes (NotFoundAction)

Usage:
  gen.py KIND[=WEIGHT][,KIND=WEIGHT...] COUNT [--seed N] [--label TEXT] > stream.txt
e.g. gen.py calc 1000000, gen.py calc=60,pokedex=30,unknown=10 100000.
`--label ~ID~` makes every calc label that literal (latency templates).
"""
import random
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


KINDS = {"calc": calc, "noop": noop, "pokedex": pokedex, "unknown": unknown}


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
