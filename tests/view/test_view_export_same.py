"""`view --export`: every document file holds what the server serves at its URL, byte for byte."""

from pathlib import Path

from emocaustics.view.data import Documents
from emocaustics.view.server import Scripts, export


class Tiny(Documents):
    def index(self):
        return {"configs": [{"i": 0, "label": "a", "score": float("nan")}]}

    def table(self, i):
        return {"i": i, "rows": [{"sample_id": "1"}, {"sample_id": "2"}]}

    def sample(self, i, j):
        return {"i": i, "j": j, "text": "é \u2028 </script>", "value": float("inf")}

    def count(self):
        return 2


def test_exported_documents_are_the_served_ones(tmp_path: Path) -> None:
    view = Tiny()
    export(view, tmp_path)
    served = Scripts(view)
    files = sorted(p.relative_to(tmp_path / "data").as_posix()[:-3] for p in (tmp_path / "data").rglob("*.js"))
    assert files == sorted(view.paths()) and len(files) == 7
    for path in files:
        assert (tmp_path / "data" / f"{path}.js").read_text(encoding="utf-8") == served.get(f"/data/{path}.js")
