"""EmoCaustics's side inputs (`core.contract.SideInputs`), the one optional part of the task contract: a dialogue
travels to its replica as its state machine's work item (`solver_view`), its utterances' embeddings stream in beside
the calls (`side_texts`, `feed`: `embedfeed.py`, and `embedboard.py` for dialogues inside replicas), and a chain
`window` config builds on the same model's sextuple `window` config (`builds_on`, `read_prior`), reusing its events
instead of extracting them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from emocaustics.core.task import Options, Sample


class DialogueSide:
    def __init__(self, task: Any) -> None:  # its EmoCausticsTask (task.py builds it): the name and extract config
        self.task = task

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample:
        """A dialogue as its state machine's work item (`extract.dialogue.make_item`): utterances, holders, the
        method's config and the prior sextuple prediction; not the annotations, which stay in the driver."""
        from emocaustics.tasks.longdialogue.extract.dialogue import make_item

        d = sample.input
        item = make_item(d.id, [u.sentence for u in d.utterances], [u.holder for u in d.utterances],
                         self.task.extract_config(options), prior=prior)
        return Sample(sample.id, item)

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None:
        """The utterances, where the method retrieves or joins events by similarity (`rag`, `window`)."""
        item = sample.input
        needs = self.task.extract_config(options).needs_embeddings(item["prior"] is not None, len(item["sentences"]))
        return list(item["sentences"]) if needs else None

    async def feed(self, texts: dict[str, list[str]], options: Options, embedder_spec: str | None, in_process: bool,
                   marks: dict[str, float]) -> Any:
        """The run's embedding feed of these utterances (dialogue id -> texts), started now beside the calls."""
        from emocaustics.tasks.longdialogue.embedfeed import start_feed

        # ahead: `rag` waits on every utterance's rows; `window` consults them only when an answer names no known event
        return await start_feed(texts, embedder_spec, in_process, marks, ahead=options.method != "window")

    def builds_on(self, options: Options, model: str | None, candidates: list[tuple[str, Any, Any, str]]) -> str | None:
        """A chain `window` config builds on the same model's sextuple `window` config (with default extraction
        options) when the job has one: its events are reused instead of extracted again."""
        if self.task.name != "emotion" or options.method != "window":
            return None
        return next((label for task_name, opts, other_model, label in candidates if task_name == "sextuple"
                     and opts.method == "window" and other_model == model and not opts.extract_options()), None)

    def read_prior(self, folder: Path, samples: list[Sample]) -> dict[str, Any]:
        """Each dialogue's sextuple prediction in `folder` (`output_chat_N.json` or `chat_N.json`), as written."""
        from emocaustics.tasks.longdialogue.extract.output import read_prior

        return read_prior(folder, [s.input.id for s in samples])
