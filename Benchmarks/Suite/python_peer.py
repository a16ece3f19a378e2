#!/usr/bin/env python3
"""The Python peer of the throughput benchmark: the Calculator's job with urllib.parse.

Reads calc x-callback URLs from stdin, one per line; for each: split it with
urllib.parse.urlsplit, decode the query (RFC 3986 as the host does: split on
'&' and the first '=', percent-decode with urllib.parse.unquote, '+' stays a
plus), compute lhs OP rhs, and write the x-success URL with
`result=[LABEL=]VALUE` appended (urllib.parse.quote, only unreserved bytes
literal) the way xcallback does, or `success?result=...` when there is no
x-success. The output is byte-for-byte xcallback's for the suite's calc
stream (the driver checks it).
"""
import sys
from urllib.parse import quote, unquote, urlsplit

OPERATIONS = {
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
}


SIGNIFICANT_DIGITS = 15


def decimal_text(value):
    """DecimalText.format: rounded to 15 significant digits (half up, on the digits of the
    shortest round-trip form), trailing zeros dropped; no fraction for integral values,
    an exponent for very large or small ones."""
    if value != value:
        return "nan"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    if value == 0:
        return "0"
    mantissa, _, power = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = [ord(c) - 48 for c in whole + fraction]
    exponent = (int(power) if power else 0) + len(whole)   # value = 0.d1d2... x 10^exponent
    while len(digits) > 1 and digits[0] == 0:
        del digits[0]
        exponent -= 1
    if len(digits) > SIGNIFICANT_DIGITS:
        round_up = digits[SIGNIFICANT_DIGITS] >= 5
        del digits[SIGNIFICANT_DIGITS:]
        if round_up:
            index = len(digits) - 1
            while index >= 0 and digits[index] == 9:
                digits[index] = 0
                index -= 1
            if index >= 0:
                digits[index] += 1
            else:
                digits.insert(0, 1)
                exponent += 1
    while len(digits) > 1 and digits[-1] == 0:
        digits.pop()
    text = "".join(chr(48 + d) for d in digits)
    sign = "-" if value < 0 else ""
    if len(digits) <= exponent <= SIGNIFICANT_DIGITS + 2:
        return sign + text + "0" * (exponent - len(digits))
    if 1 <= exponent < len(digits):
        return sign + text[:exponent] + "." + text[exponent:]
    if -5 <= exponent <= 0:
        return sign + "0." + "0" * -exponent + text
    head = text if len(digits) == 1 else text[0] + "." + text[1:]
    power = exponent - 1
    return sign + head + ("e-" if power < 0 else "e+") + ("0" if abs(power) < 10 else "") + str(abs(power))


def handle(line):
    url = urlsplit(line)
    params = {}
    for item in url.query.split("&"):
        name, _, value = item.partition("=")
        name = unquote(name, errors="strict")
        if name not in params:
            params[name] = unquote(value, errors="strict")
    operation = OPERATIONS.get(url.path.lstrip("/"))
    try:
        value = decimal_text(operation(float(params["lhs"]), float(params["rhs"])))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return "error?errorCode=ParameterError"
    label = params.get("text")
    result = "result=" + quote(label + "=" + value if label is not None else value, safe="")
    success = params.get("x-success")
    if success is None:
        return "success?" + result
    callback = urlsplit(success)
    query = callback.query + "&" + result if callback.query else result
    return callback._replace(query=query).geturl()


def main():
    out = sys.stdout
    batch = []
    for line in sys.stdin:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        batch.append(handle(line))
        if len(batch) >= 4096:
            out.write("\n".join(batch) + "\n")
            batch.clear()
    if batch:
        out.write("\n".join(batch) + "\n")


if __name__ == "__main__":
    main()
