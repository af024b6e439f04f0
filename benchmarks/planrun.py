"""The benchmarks' way onto the shared solving plan (`solve.plan.asolve_samples`), with stand-in embeddings.

A benchmark that measures the calls, the replicas, the driver's memory or the eval log, not the embedder, gives each
dialogue vectors made here without a model (hashing). `StandInEmbeddings` is the EmoCaustics task with those vectors
packed into each solver view, in place of side texts for the run's embedding feed (which would load minilm and embed
every utterance on the benchmark's cores beside the calls). Everything else is the task's own: solver views, sizes,
affinity, weight and chain for placement, the state machine (`solve_dialogue`), prediction and failure files, and
the plan around it (`Bound` -> `solve_item`, in this process or inside a replica).

`copies_of` makes the synthetic scale-ups: every dialogue again under a new id, with renamed holders so that a copy's
prompts share no prefix with the original's on any replica.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from emocaustics.core.task import Options, Sample, Side, get_task
from emocaustics.tasks.longdialogue.embeddings import Embeddings, pack, unpack
from emocaustics.tasks.longdialogue.side import DialogueSide
from emocaustics.tasks.longdialogue.task import EmoCausticsTask, EmoOptions

ID_STRIDE = 1_000_000  # copy k of dialogue d: id d + k * ID_STRIDE

Vectors = Callable[[list[str]], np.ndarray]


def hash_vectors(texts: list[str]) -> np.ndarray:
    """The dry run's stand-in embedder (`solve.forecast.StandInEmbedder`: one pseudo-random unit vector per distinct
    text), called without an event loop: its `embed` never awaits, so the coroutine ends at its first step."""
    from emocaustics.solve.forecast import StandInEmbedder

    coro = StandInEmbedder().embed(texts)
    try:
        coro.send(None)
    except StopIteration as done:
        return np.asarray(done.value, dtype=np.float32)
    coro.close()
    raise RuntimeError("StandInEmbedder.embed awaited something: it cannot stand in without a loop here")


class StandInEmbeddings(EmoCausticsTask):
    """The EmoCaustics task `base` whose `rag`/`window` dialogues carry stand-in vectors (`vectors(sentences)`) in
    their solver view instead of asking the run's embedding feed. One packed copy per distinct dialogue text, shared by
    its configs and copies (renamed holders, same sentences), as a run ships one per dialogue. Only the task's name
    travels to a replica (`__getstate__`): the vectors are in the items already."""

    def __init__(self, base: EmoCausticsTask | str, vectors: Vectors = hash_vectors, *,
                 packed: dict[tuple[str, ...], dict[str, Any]] | None = None) -> None:
        base = get_task(base) if isinstance(base, str) else base
        super().__init__(base.name, base.description, base.methods.solver)
        self.side = StandInSide(self)
        self.vectors = vectors
        # packed vectors by dialogue text; pass one dict to several tasks (configs) so that they share it too
        self._packed = packed if packed is not None else {}

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k not in ("vectors", "_packed")}

    def prepare(self, samples: Iterable[Sample], options: Options) -> None:
        """Make every sample's vectors now (outside a benchmark's timing, as the items were built before)."""
        for s in samples:
            self.solver_view(s, options)

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample:
        view = DialogueSide(self).solver_view(sample, options, prior)
        item = view.input
        if item["sentences"] and self.extract_config(options).needs_embeddings(item["prior"] is not None,
                                                                             len(item["sentences"])):
            key = tuple(item["sentences"])
            if key not in self._packed:
                self._packed[key] = pack(self.vectors(item["sentences"]))
            item["emb"] = self._packed[key]
        return view

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None:
        return None  # the vectors travel in the view: no feed, no embedder

    async def solve(self, llm: Any, sample: Sample, options: Options, side: Side) -> Any:
        from emocaustics.tasks.longdialogue.extract.dialogue import solve_dialogue

        packed = sample.input.get("emb")
        emb = Embeddings(unpack(packed)) if packed is not None else None
        return await solve_dialogue(llm, sample.input, emb, side.stats)



class StandInSide(DialogueSide):
    """The side inputs of `StandInEmbeddings`: its solver view (vectors packed in), no texts to embed."""

    task: StandInEmbeddings

    def solver_view(self, sample: Sample, options: Options, prior: Any = None) -> Sample:
        return self.task.solver_view(sample, options, prior)

    def side_texts(self, sample: Sample, options: Options) -> list[str] | None:
        return self.task.side_texts(sample, options)

def options_of(**cfg: Any) -> EmoOptions:
    """A config as the grid writes it (`{"task": ..., "method": ..., ...}`, `ExtractConfig`'s fields) as options."""
    return EmoOptions(**{k: v for k, v in cfg.items() if k != "task"})


def samples_of(dialogues: Iterable[Any]) -> list[Sample]:
    """The task's samples of these dialogues, as `EmoCausticsTask.load` makes them."""
    return [Sample(str(d.id), d, meta={"n_utterances": len(d.utterances)}) for d in dialogues]


def copy_of(d: Any, k: int, *, fresh_strings: bool = False) -> Any:
    """Copy k of dialogue `d`: id + k * ID_STRIDE, holder A named Ak (copy 0: the dialogue itself); `fresh_strings`:
    with its own copies of the sentence strings (the 0th too), as a bigger dataset's would be."""
    if k == 0 and not fresh_strings:
        return d
    utts = tuple(dataclasses.replace(u, holder=f"{u.holder}{k}" if k else u.holder,
                                     sentence=(u.sentence + " ")[:-1] if fresh_strings else u.sentence)
                 for u in d.utterances)
    return dataclasses.replace(d, id=d.id + k * ID_STRIDE, utterances=utts)


def copies_of(dialogues: list[Any], n: int, *, fresh_strings: bool = False) -> list[Any]:
    """Every dialogue `n` times (`copy_of`), copy 0 of each first, then copy 1 of each, and so on."""
    return [copy_of(d, k, fresh_strings=fresh_strings) for k in range(n) for d in dialogues]


class StreamedCopies(Sequence[Sample]):
    """The samples of `copies_of(dialogues, n, fresh_strings=True)`, each made when it is indexed, as a streaming
    loader would read a bigger dataset from disk: the copies are never all in memory (the plan holds a sample only
    while it is in flight, `solve.plan.asolve_samples`)."""

    def __init__(self, dialogues: list[Any], n: int) -> None:
        self.dialogues, self.n = dialogues, n

    def __len__(self) -> int:
        return len(self.dialogues) * self.n

    def __getitem__(self, i: int) -> Sample:  # type: ignore[override]
        if not 0 <= i < len(self):
            raise IndexError(i)
        k, j = divmod(i, len(self.dialogues))
        return samples_of([copy_of(self.dialogues[j], k, fresh_strings=True)])[0]
