"""emocaustics: a Ray-distributed evaluation cluster for EmoCaustics emotion analysis of long Chinese dialogues."""

__version__ = "0.1.0"
