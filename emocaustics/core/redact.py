"""Secrets in model specs and in what a run prints or stores. Keys come from the environment only: a secret key in a
spec's query (or a model entry's `engine:`) is refused (`refuse_secrets`), credentials in a base URL are taken out of
it (`models.http`), and every message or record that shows a spec as a user wrote it shows it `redacted`; so no spec
string, record or line carries a secret. In the core: the run records (`core.provenance`) redact too.

Text that comes from elsewhere (an endpoint's error body that echoes the key, a prompt) goes through `scrub`, which
removes every secret the run knows (`secrets`): once where errors are made (`models.base.Completion`) and in the eval
log (`evallog.writer`)."""

from __future__ import annotations

import base64
import json
import os
import re
from typing import Any

from emocaustics.core.errors import UsageError

# Query keys that would carry a secret into the spec (and so into config.yaml, run.json, provenance and every
# message that names the model): refused, with the environment variable to use instead. Keys come from the
# environment only; credentials written in a base URL become its Authorization header (`models.http.strip_credentials`).
SECRET_KEYS = frozenset({"api_key", "apikey", "api-key", "key", "token", "access_token", "auth", "authorization",
                         "password", "secret", "x-api-key"})
# Environment variables whose names say they hold a secret (a match on the variable's name, never on a message).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
REDACTED = "[redacted]"
KEY_VARIABLES: set[str] = set()  # where the providers read their keys (`models.registry.register`), whatever the name
_LEARNED: set[str] = set()  # secrets given outside the environment: a base URL's credentials, as they are sent


def redacted(spec: str) -> str:
    """`spec` as an error message may show it: a URL's password and the values of secret query keys as `***`."""
    spec = re.sub(r"(://[^/@?#:]*):[^/@?#]*@", r"\1:***@", spec)
    return re.sub(r"([?&])([^=&]+)=([^&]*)",
                  lambda m: f"{m[1]}{m[2]}=***" if m[2].lower() in SECRET_KEYS else m[0], spec)


def learn_credentials(user: str, password: str) -> str:
    """Remember a base URL's credentials in every form they travel in (the pair, its HTTP Basic base64, the password)
    so that `scrub` removes them; returns the Authorization header's value."""
    pair = f"{user}:{password}"
    header = base64.b64encode(pair.encode()).decode("ascii")
    _LEARNED.update(s for s in (pair, header, password) if len(s) >= 8)
    return "Basic " + header


def secrets(environ: Any = None) -> list[str]:
    """Every secret this process knows, longest first: the values of the variables a provider reads its key from
    or whose names say they hold one (8 characters or more: shorter ones are not keys), and those learned."""
    env = os.environ if environ is None else environ
    found = {v.strip() for k, v in env.items() if (k in KEY_VARIABLES or SECRET_NAME.search(k)) and len(v.strip()) >= 8}
    return sorted(found | _LEARNED, key=len, reverse=True)


class Redactor:
    """Replaces each of `secrets` (as it is, and JSON-escaped) by `REDACTED` in a text."""

    def __init__(self, secrets: list[str]) -> None:
        forms = set()
        for s in secrets:
            forms.update({s, json.dumps(s)[1:-1], json.dumps(s, ensure_ascii=False)[1:-1]})
        self.forms = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text


def scrub(text: str) -> str:
    """`text` without any secret the run knows (`secrets`, read now: a key set after start-up is known too)."""
    return Redactor(secrets())(text)


def refuse_secrets(options: Any, where: str) -> None:
    """A UsageError when a spec's options (its query, a model entry's `engine:`) hold a secret key (`SECRET_KEYS`);
    `where` names the spec, redacted."""
    secret = sorted(k for k in options if str(k).lower() in SECRET_KEYS)
    if secret:
        raise UsageError(f"{where}: {secret[0]!r} would be stored with the run and printed; keys come from the "
                         "environment only (OPENAI_API_KEY or EMOCAUSTICS_API_KEY, ANTHROPIC_API_KEY), or as "
                         "https://USER:PASSWORD@HOST/... in the URL (sent as HTTP Basic, never stored)")
