"""The workbench's folders (emocaustics/ui/paths.py): every path the page gives is read under the root (or the output
folder, as `out:...`), and one that leaves it is refused, saying how it left: '..', an absolute path, a symbolic
link to elsewhere; an upload is saved under the output folder only, by a plain name."""

from __future__ import annotations

from pathlib import Path

import pytest

from emocaustics.ui.paths import Folders, Refused


@pytest.fixture
def folders(tmp_path: Path) -> Folders:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("no", encoding="utf-8")
    (root / "out-link").symlink_to(tmp_path / "secret.txt")
    (root / "in-link").symlink_to(root / "sub" / "a.json")
    return Folders(root, tmp_path / "out")


def test_a_path_under_the_root_is_read(folders: Folders) -> None:
    assert folders.resolve("sub/a.json") == folders.root / "sub" / "a.json"
    assert folders.resolve("in-link") == folders.root / "sub" / "a.json"  # a link that stays inside is fine


@pytest.mark.parametrize("typed, says", [
    ("../secret.txt", "'..' leaves"),
    ("sub/../../secret.txt", "'..' leaves"),
    ("/etc/passwd", "an absolute path"),
    ("C:\\Windows", "an absolute path"),
    ("out-link", "a symbolic link to"),
    ("sub/none.json", "no such file or folder"),
    ("", "empty"),
])
def test_a_path_that_leaves_the_root_is_refused(folders: Folders, typed: str, says: str) -> None:
    with pytest.raises(Refused, match="refused outside it|no such|empty|absolute") as err:
        folders.resolve(typed, "submission")
    assert says in str(err.value) and "submission" in str(err.value)


def test_out_paths_stay_in_the_output_folder(folders: Folders) -> None:
    with pytest.raises(Refused, match="'..' leaves the output folder"):
        folders.resolve("out:../root/sub/a.json")
    folder = folders.next_folder("uploads")
    saved = folders.save_upload(folder, "x.jsonl", b"{}\n")
    assert folders.resolve(folders.ref(saved)) == saved and folders.out in saved.parents


@pytest.mark.parametrize("name", ["../x.json", "a/b.json", "..", ""])
def test_an_upload_name_must_be_a_plain_name(folders: Folders, name: str) -> None:
    with pytest.raises(Refused, match="not a plain file name"):
        folders.save_upload(folders.next_folder("uploads"), name, b"")


def test_a_link_to_a_sibling_whose_name_starts_like_the_root_is_outside(folders: Folders, tmp_path: Path) -> None:
    """Inside is by path parts, not by text: `root-other` is not under `root` (a link there is refused, directly or
    inside a folder a job would read), and a link to the root itself is inside."""
    (tmp_path / "root-other").mkdir()
    (tmp_path / "root-other" / "x.txt").write_text("no", encoding="utf-8")
    (folders.root / "twin").symlink_to(tmp_path / "root-other" / "x.txt")
    (folders.root / "sub" / "deep").symlink_to(tmp_path / "root-other")
    (folders.root / "self").symlink_to(folders.root)
    for typed in ("twin", "sub"):
        with pytest.raises(Refused, match="symbolic link"):
            folders.resolve(typed)
    (folders.root / "sub" / "deep").unlink()
    (folders.root / "twin").unlink()
    (folders.root / "out-link").unlink()
    assert folders.resolve("self") == folders.root
