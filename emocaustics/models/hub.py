"""Model names on the Hugging Face hub (`BAAI/bge-m3`, `Qwen/Qwen2.5-72B-Instruct`): found locally or fetched.

A name is first looked up in the local hub cache (works offline); otherwise it is downloaded when the hub can be
reached, and otherwise the error says so in one line: offline mode is on (`HF_HUB_OFFLINE=1`) or the hub cannot be
reached, and how to get the model there (download it where the hub is reachable, or give a local path).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from emocaustics.core.errors import UsageError

_HUB_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


def looks_like_hub_name(name: str) -> bool:
    """`org/name` that is not a path on this machine."""
    return bool(_HUB_NAME.match(name)) and not Path(name).expanduser().exists()


def offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def cached_path(name: str) -> Path | None:
    """The local snapshot of a hub model, if the hub cache holds one (no network)."""
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # noqa: BLE001 - not cached (or no hub library): the caller decides what that means
        return None


def check(name: str, what: str = "model", timeout: float = 10.0) -> str:
    """Can `name` be had? Returns where it comes from ("local cache: PATH" or "hub"); raises a one-line UsageError
    naming the model and the way out when it cannot."""
    path = cached_path(name)
    if path is not None:
        return f"local cache: {path}"
    fix = (f"download it where the hub is reachable (`huggingface-cli download {name}`, then copy the cache or give "
           "the folder as a local path)")
    if offline():
        raise UsageError(f"{what} {name!r} is not in the local Hugging Face cache and offline mode is on "
                         f"(HF_HUB_OFFLINE=1): {fix}")
    try:
        from huggingface_hub import HfApi

        HfApi().model_info(name, timeout=timeout)
    except Exception as exc:  # noqa: BLE001 - any failure here means "cannot get it": say which
        kind = type(exc).__name__
        if "RepositoryNotFound" in kind or getattr(getattr(exc, "response", None), "status_code", None) == 404:
            raise UsageError(f"{what} {name!r}: no such model on the Hugging Face hub") from None
        raise UsageError(f"{what} {name!r} is not in the local Hugging Face cache and the hub cannot be reached "
                         f"({kind}): {fix}") from None
    return "hub (downloaded at start)"


def fetch(name: str, what: str = "model") -> Path:
    """The local folder of a hub model: the cached snapshot, else downloaded now (after `check`)."""
    path = cached_path(name)
    if path is not None:
        return path
    check(name, what)
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(name))
