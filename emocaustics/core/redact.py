"""Secrets in model specs. Keys come from the environment only: a secret key in a spec's query (or a model entry's
`engine:`) is refused (`refuse_secrets`), credentials in a base URL are taken out of it (`models.http`), and every
message or record that shows a spec as a user wrote it shows it `redacted`; so no spec string, record or line
carries a secret. In the core: the run records (`core.provenance`) redact too."""

from __future__ import annotations

import re
from typing import Any

from emocaustics.core.errors import UsageError

# Query keys that would carry a secret into the spec (and so into config.yaml, run.json, provenance and every
# message that names the model): refused, with the environment variable to use instead. Keys come from the
# environment only; credentials written in a base URL become its Authorization header (`models.http.strip_credentials`).
SECRET_KEYS = frozenset({"api_key", "apikey", "api-key", "key", "token", "access_token", "auth", "authorization",
                         "password", "secret", "x-api-key"})


def redacted(spec: str) -> str:
    """`spec` as an error message may show it: a URL's password and the values of secret query keys as `***`."""
    spec = re.sub(r"(://[^/@?#:]*):[^/@?#]*@", r"\1:***@", spec)
    return re.sub(r"([?&])([^=&]+)=([^&]*)",
                  lambda m: f"{m[1]}{m[2]}=***" if m[2].lower() in SECRET_KEYS else m[0], spec)


def refuse_secrets(options: Any, where: str) -> None:
    """A UsageError when a spec's options (its query, a model entry's `engine:`) hold a secret key (`SECRET_KEYS`);
    `where` names the spec, redacted."""
    secret = sorted(k for k in options if str(k).lower() in SECRET_KEYS)
    if secret:
        raise UsageError(f"{where}: {secret[0]!r} would be stored with the run and printed; keys come from the "
                         "environment only (OPENAI_API_KEY or EMOCAUSTICS_API_KEY, ANTHROPIC_API_KEY), or as "
                         "https://USER:PASSWORD@HOST/... in the URL (sent as HTTP Basic, never stored)")
