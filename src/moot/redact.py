"""Credentials never reach what moot writes or prints: one function, ``redact``, masks them.

It is applied where text that may hold a credential enters moot: every moot error message (a
server that echoes the key in a 401, a URL in a connection error), every base URL that is stored
or shown (a backend's model id, the stored experiment and conditions, the header of ``moot run``).
It masks, with ``***``:

- the user information of a URL (``http://user:password@host`` -> ``http://***@host``);
- the value of a credential-like query parameter (``?api-key=``, ``key``, ``token``, ``access_token``,
  ``password``, ``secret``, ``sig``, ...);
- a bearer token, an ``sk-...`` key and what follows "API key ...:" (and a Bearer or Basic) in an
  error message;
- every secret registered with ``register_secret`` (the API key read from the environment, the
  credentials of a base URL and their Basic-authorization form), wherever it appears: as it is, in the
  encodings a server may echo it in (percent-encoded, base64, JSON-escaped) and, for a long one, cut short
  (a server that shows only the start of the key it refused). A secret holding quotes, backslashes or
  spaces is masked whole however each of its characters is written (as it is, percent-encoded in either
  case, JSON-, Python- or HTML-escaped, mixed as an encoder mixes them) and with each run of its spaces
  written as any run of whitespace (a message shortened to one line).
"""

from __future__ import annotations

import base64
import json
import math
import re
import threading
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

MASK = "***"
# shorter values are too likely to occur by chance in ordinary text to be masked everywhere
MIN_SECRET_LENGTH = 6
# a secret at least this long is masked also cut short, down to a prefix of PREFIX_SHARE of it (at least
# MIN_PREFIX characters): long enough that no other text starts the same by chance
MIN_PREFIXED_LENGTH = 12
MIN_PREFIX = 8
PREFIX_SHARE = 2 / 3

_PARAMS = r"api[-_]?key|key|token|access[-_]?token|auth|password|passwd|pwd|secret|client[-_]?secret|sig|signature"
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # the user information of a URL, up to its last "@" (a "/" in a password not percent-encoded included)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s@]+@"), rf"\1{MASK}@"),
    (re.compile(rf"(?i)([?&;](?:{_PARAMS})=)[^&#\s\"'<>]+"), rf"\1{MASK}"),
    (
        re.compile(r"(?i)(\bapi[-_ ]?key\b[^:=\n]{0,30}?[:=]\s*(?:(?:bearer|basic)\s+)?+)(?!\*\*\*)[^\s\"',;]+"),
        rf"\1{MASK}",
    ),
    (re.compile(r"(?i)(\bbearer\s+)(?!\*\*\*)[^\s\"',;]+"), rf"\1{MASK}"),
    (re.compile(r"\bsk-[A-Za-z0-9_*.-]{6,}"), f"sk-{MASK}"),
)
_SECRET_PARAM = re.compile(rf"(?i)^(?:{_PARAMS})$")

_secrets: set[str] = set()
# a secret's text -> its anchor and what matches it however its characters are written (``_any_form``)
_patterns: dict[str, tuple[str, re.Pattern[str]]] = {}
_lock = threading.Lock()

# how JSON and Python escape a character with a backslash; HTML's names for the characters it escapes
_BACKSLASHED = {'"': '"', "\\": "\\", "/": "/", "'": "'", "\n": "n", "\r": "r", "\t": "t"}
_HTML_NAMES = {'"': "quot", "&": "amp", "<": "lt", ">": "gt", "'": "apos", "\xa0": "nbsp"}


def register_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears from now on, in every form a server may echo it in (see
    ``_encodings``)."""
    if not value:
        return
    collapsed = " ".join(value.split())  # as a message shortened to one line shows it
    forms = _encodings(value) | _encodings(collapsed)
    texts = {t for t in (value.strip(), unquote(value).strip()) if len(t) >= MIN_SECRET_LENGTH}
    with _lock:
        _secrets.update(form for form in forms if len(form) >= MIN_SECRET_LENGTH)
        for text in texts - _patterns.keys():
            _patterns[text] = (_anchor(text), _any_form(text))


def _encodings(value: str) -> set[str]:
    """``value`` and the forms it takes in a URL, an HTTP header or a JSON body: percent-decoded and
    -encoded, base64 (standard and URL-safe, with and without padding) and JSON-escaped."""
    raw = value.encode()
    padded = {base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()}
    return {
        value,
        unquote(value),
        quote(value, safe=""),
        quote_plus(value, safe=""),
        *padded,
        *(p.rstrip("=") for p in padded),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    }


def _any_form(text: str) -> re.Pattern[str]:
    """What matches ``text`` with each character written in any of the forms an encoder writes it in (see
    ``_character``), and each run of whitespace in it as any run of whitespace, as sent or escaped."""
    pieces = [_SPACES if chunk.isspace() else "".join(map(_character, chunk)) for chunk in re.split(r"(\s+)", text)]
    return re.compile("".join(p for p in pieces if p))


def _character(c: str) -> str:
    """A regular expression of ``c`` as it is, percent-encoded (hex in either case), JSON's ``\\uXXXX``,
    escaped with a backslash (JSON, Python), or an HTML character reference. A letter or digit only as it is
    (no encoder escapes one), so that the secret's longest run of them is text any match holds (``_anchor``)."""
    if c.isalnum():
        return re.escape(c)
    utf16 = c.encode("utf-16-be")
    forms = [
        re.escape(c),
        "".join("%" + _hex(f"{b:02X}") for b in c.encode()),
        "".join(r"\\u" + _hex(utf16[i : i + 2].hex().upper()) for i in range(0, len(utf16), 2)),
        f"&#0*{ord(c)};",
        f"&#[xX]0*{_hex(f'{ord(c):X}')};",
    ]
    if c in _BACKSLASHED:  # a backslash doubled, or doubled again (escaped twice)
        forms.append(re.escape("\\" + _BACKSLASHED[c]) + ("+" if c == "\\" else ""))
    if c in _HTML_NAMES:
        forms.append(f"&{_HTML_NAMES[c]};")
    return "(?:" + "|".join(forms) + ")"


def _anchor(text: str) -> str:
    """The longest run of letters and digits in ``text``: any form ``_any_form`` matches holds it as it is,
    so text without it is not searched (a long reply is searched by ``str.find`` alone)."""
    return max(re.findall(r"[^\W_]+", text), key=len, default="")


def _hex(digits: str) -> str:
    """A regular expression of the hex ``digits`` in either case."""
    return "".join(f"[{d}{d.lower()}]" if d.isalpha() else d for d in digits)


# a run of whitespace as sent, percent-encoded, "+" (a form's space), escaped (JSON, HTML)
_SPACES = (
    r"(?:\s|%(?:20|09|0[aAdD])|\+|\\[ntr]|\\u00(?:20|09|0[aAdD])|&#0*(?:32|9|10|13);|&#[xX]0*(?:20|9|[aAdD]);"
    r"|&nbsp;|\xa0)+"
)


def register_url_secrets(url: str | None) -> None:
    """Register the credentials a URL carries: its user information and credential-like query values."""
    if not url:
        return
    try:
        parts = urlsplit(url)
    except ValueError:
        return
    if "@" in parts.netloc:
        userinfo = parts.netloc.rsplit("@", 1)[0]
        register_secret(userinfo)
        for piece in userinfo.split(":", 1):
            register_secret(piece)
        # what an HTTP client sends for it (Authorization: Basic ...), which a server may echo
        register_secret(base64.b64encode(unquote(userinfo).encode()).decode())
    for name, value in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_PARAM.match(name):
            register_secret(value)


def redact(text: str) -> str:
    """``text`` with every credential masked (see the module's docstring)."""
    text = redact_secrets(text)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def redact_secrets(text: str) -> str:
    """``text`` with only the registered secrets masked: for a model's reply, where the patterns could
    mask ordinary words."""
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)  # a longer secret first: it may hold a shorter one
        patterns = [_patterns[t] for t in sorted(_patterns, key=len, reverse=True)]
    for anchor, pattern in patterns:  # whole, however its characters are written
        if anchor in text:
            text = pattern.sub(MASK, text)
    for secret in secrets:  # whole first: a start of one form may begin another form (base64's two alphabets)
        text = text.replace(secret, MASK)
    for secret in secrets:
        if len(secret) >= MIN_PREFIXED_LENGTH:
            text = _cut_short_masked(text, secret)
    return text


def _cut_short_masked(text: str, secret: str) -> str:
    """``text`` with every long-enough start of ``secret`` masked: a server's message that cuts the secret
    short ("sk-abcdef...", "key starts with ...")."""
    shortest = max(MIN_PREFIX, math.ceil(len(secret) * PREFIX_SHARE))
    pieces: list[str] = []
    start = 0
    while (found := text.find(secret[:shortest], start)) >= 0:
        end = found + shortest
        while end - found < len(secret) and end < len(text) and text[end] == secret[end - found]:
            end += 1  # as much of the secret as is there
        pieces += [text[start:found], MASK]
        start = end
    return "".join(pieces) + text[start:]
