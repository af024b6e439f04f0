"""`emocaustics view RUN_DIR`: a local web viewer over a run's eval log (configs -> samples -> one sample)."""
