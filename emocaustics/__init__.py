"""emocaustics: a Ray-distributed evaluation cluster for LLM evaluation in emotion, event and narrative understanding."""

__version__ = "0.1.0"
